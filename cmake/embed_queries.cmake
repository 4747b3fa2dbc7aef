# embed_queries.cmake: writes OUT_C and OUT_H from the statements of
# QUERY_DIR (sql/queries/<area>.sql, sql/README.md says how they are
# written).  Run at build time: cmake -DQUERY_DIR=... -DOUT_C=... -DOUT_H=...
# -P embed_queries.cmake.
#
# A file holds blocks, each opened by a header line:
#   -- name: <area>_<what>   a statement, SQL_<area>_<what>[] in C;
#   -- columns: <list>       a column list, one column a line, each line
#                            "<expression>,  -- <key>"; {{<list>}} in a
#                            statement stands for the expressions joined
#                            by ", ", and C gets enum <list>_col with
#                            <LIST>_COL_<KEY> for the position of each and
#                            <LIST>_COL_COUNT after the last.
# Lines that are only a comment are documentation and are left out of
# the statement, as are the blank lines around it and one final ';'.
# The text goes in as byte arrays, as the migrations do (embed_sql.cmake):
# no quote or backslash of a statement can break the C it becomes.

cmake_minimum_required(VERSION 3.20)
include("${CMAKE_CURRENT_LIST_DIR}/sql_bytes.cmake")

# Splits text into the variable named out as a list of lines; ';', '[' and
# ']' in them are kept as the markers below (CMake's lists treat them
# specially) and put back by unmark().
function(lines_of text out)
  string(REPLACE ";" "@CV_SEMI@" text "${text}")
  string(REPLACE "[" "@CV_LB@" text "${text}")
  string(REPLACE "]" "@CV_RB@" text "${text}")
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

macro(unmark var)
  string(REPLACE "@CV_SEMI@" ";" ${var} "${${var}}")
  string(REPLACE "@CV_LB@" "[" ${var} "${${var}}")
  string(REPLACE "@CV_RB@" "]" ${var} "${${var}}")
endmacro()

file(GLOB files RELATIVE "${QUERY_DIR}" "${QUERY_DIR}/*.sql")
list(SORT files)
set(names "")      # every statement's name, in file order
set(lists "")      # every column list's name
foreach(f IN LISTS files)
  if(NOT f MATCHES "^([a-z][a-z0-9]*)\\.sql$")
    message(FATAL_ERROR "sql/queries/${f}: files are named <area>.sql")
  endif()
  set(area "${CMAKE_MATCH_1}")
  file(READ "${QUERY_DIR}/${f}" text)
  lines_of("${text}" lines)
  set(kind "")
  set(cur "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^-- (name|columns): *([a-z][a-z0-9_]*) *$")
      set(kind "${CMAKE_MATCH_1}")
      set(cur "${CMAKE_MATCH_2}")
      if(NOT cur MATCHES "^${area}_" AND NOT cur STREQUAL area)
        message(FATAL_ERROR
          "sql/queries/${f}: ${cur} does not start with ${area}_")
      endif()
      if(cur IN_LIST names OR cur IN_LIST lists)
        message(FATAL_ERROR "sql/queries/${f}: ${cur} is defined twice")
      endif()
      if(kind STREQUAL "name")
        list(APPEND names "${cur}")
        set(file_${cur} "${f}")
        set(body_${cur} "")
      else()
        list(APPEND lists "${cur}")
        set(file_${cur} "${f}")
        set(exprs_${cur} "")
        set(keys_${cur} "")
        set(enum_${cur} "")
      endif()
    elseif(line MATCHES "^[ \t]*--" OR cur STREQUAL "")
      # documentation, or the file's opening comment
    elseif(kind STREQUAL "name")
      string(APPEND body_${cur} "${line}\n")
    elseif(line MATCHES "^[ \t]*$")
    elseif(line MATCHES "^[ \t]*(.*[^ \t,])[ \t]*,?[ \t]*--[ \t]*([a-z][a-z0-9_]*)[ \t]*$")
      set(expr "${CMAKE_MATCH_1}")
      string(TOUPPER "${CMAKE_MATCH_2}" key)
      if(key IN_LIST keys_${cur})
        message(FATAL_ERROR "sql/queries/${f}: ${cur}: key ${key} twice")
      endif()
      list(APPEND keys_${cur} "${key}")
      unmark(expr)
      string(REPLACE "*/" "* /" note "${expr}")
      string(APPEND enum_${cur} "@CV_ITEM@${key}@CV_SEP@/* ${note} */\n")
      if(exprs_${cur} STREQUAL "")
        set(exprs_${cur} "${expr}")
      else()
        string(APPEND exprs_${cur} ", ${expr}")
      endif()
    else()
      message(FATAL_ERROR "sql/queries/${f}: ${cur}: a column is "
        "\"<expression>, -- <key>\", not: ${line}")
    endif()
  endforeach()
endforeach()

# The header: the statements' names, then the column lists' enums.
set(decls "")
set(prev "")
foreach(n IN LISTS names)
  if(NOT file_${n} STREQUAL prev)
    string(APPEND decls "\n/* sql/queries/${file_${n}} */\n")
    set(prev "${file_${n}}")
  endif()
  string(APPEND decls "extern const char SQL_${n}[];\n")
endforeach()
set(enums "")
foreach(l IN LISTS lists)
  string(TOUPPER "${l}" L)
  string(REPLACE "@CV_ITEM@" "\t${L}_COL_" items "${enum_${l}}")
  string(REPLACE "@CV_SEP@" ", " items "${items}")
  string(APPEND enums "
/* The columns of {{${l}}} (sql/queries/${file_${l}}), by position. */
enum ${l}_col {
${items}\t${L}_COL_COUNT /* how many */
};
")
endforeach()

# The statements, their column lists put in.
set(arrays "")
foreach(n IN LISTS names)
  set(sql "${body_${n}}")
  unmark(sql)
  foreach(l IN LISTS lists)
    string(REPLACE "{{${l}}}" "${exprs_${l}}" sql "${sql}")
  endforeach()
  if(sql MATCHES "{{([^}]*)}}")
    message(FATAL_ERROR
      "sql/queries/${file_${n}}: ${n}: no column list ${CMAKE_MATCH_1}")
  endif()
  string(STRIP "${sql}" sql)
  string(REGEX REPLACE ";$" "" sql "${sql}")
  string(STRIP "${sql}" sql)
  if(sql STREQUAL "")
    message(FATAL_ERROR "sql/queries/${file_${n}}: ${n} is empty")
  endif()
  string(HEX "${sql}" hex)
  c_bytes("${hex}" bytes)
  string(APPEND arrays "const char SQL_${n}[] = {\n\t${bytes}};\n\n")
endforeach()

file(WRITE "${OUT_H}" "/* Generated by cmake/embed_queries.cmake from sql/queries/: do not edit. */
#ifndef SQL_QUERIES_H
#define SQL_QUERIES_H
${decls}${enums}
#endif
")
file(WRITE "${OUT_C}" "/* Generated by cmake/embed_queries.cmake from sql/queries/: do not edit. */
#include \"sql_queries.h\"

${arrays}")
