# Writes OUTPUT, a C++ file that holds each of FILES (paths relative to
# SOURCE_DIR) as bytes, with its name and media type: the web console's
# files, built into the server so that it serves them with no file system
# and no network (console_files.h).
#
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -DFILES=a.html,b.js -P embed.cmake

string(REPLACE "," ";" FILES "${FILES}")
set(types_html "text/html; charset=utf-8")
set(types_js "text/javascript; charset=utf-8")
set(types_css "text/css; charset=utf-8")
set(types_svg "image/svg+xml")

set(entries "")
set(arrays "")
set(i 0)
foreach(name IN LISTS FILES)
  file(READ "${SOURCE_DIR}/${name}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  if(size EQUAL 0)
    message(FATAL_ERROR "embed.cmake: ${name} is empty")
  endif()
  # 16 bytes a line keeps the file readable by editors.
  string(REGEX REPLACE "(................................)" "\\1\n    " hex
         "${hex}")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  get_filename_component(extension "${name}" LAST_EXT)
  string(SUBSTRING "${extension}" 1 -1 extension)
  if(NOT DEFINED types_${extension})
    message(FATAL_ERROR "embed.cmake: no media type for ${name}")
  endif()
  string(APPEND arrays "constexpr char kFile${i}[] = {\n    ${bytes}};\n")
  string(APPEND entries
    "    {\"${name}\", \"${types_${extension}}\", {kFile${i}, ${size}}},\n")
  math(EXPR i "${i} + 1")
endforeach()

file(WRITE "${OUTPUT}.new" "// Made by server/console/embed.cmake from server/console/; do not edit.

#include \"server/console_files.h\"

namespace halfspace {
namespace {

${arrays}
}  // namespace

absl::Span<const ConsoleFile> ConsoleFiles() {
  static constexpr ConsoleFile kFiles[] = {
${entries}  };
  return kFiles;
}

}  // namespace halfspace
")
# Only a changed file is rewritten, so that a build after a mere
# reconfiguration compiles nothing.
file(COPY_FILE "${OUTPUT}.new" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.new")
