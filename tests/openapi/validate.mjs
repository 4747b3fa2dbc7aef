// validate.mjs FILE: validates an OpenAPI document with
// @seriousme/openapi-schema-validator (the JSON Schemas of the OpenAPI
// specification); prints "valid OpenAPI VERSION" or the errors, exit 1.
import { Validator } from "@seriousme/openapi-schema-validator";
import { readFileSync } from "node:fs";

const validator = new Validator();
const res = await validator.validate(JSON.parse(readFileSync(process.argv[2], "utf8")));
if (res.valid) {
  console.log("valid OpenAPI " + validator.version);
} else {
  console.log(JSON.stringify(res.errors, null, 1));
  process.exit(1);
}
