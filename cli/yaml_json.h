/*
 * yaml_json.h: YAML read as JSON (yaml.c), for cronvisorctl apply.
 */
#ifndef YAML_JSON_H
#define YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

json_t *yaml_to_json(const char *text, size_t len, char *err, size_t errlen);

#endif
