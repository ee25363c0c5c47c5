# SPDX-License-Identifier: Apache-2.0
# Writes a man page from a command's --help text, at build time, so that the
# page the Debian package installs says exactly what the command it ships
# says (no help2man or pandoc needed). Run as
#   cmake -DCOMMAND=<path> -DNAME=<name> -DSUMMARY=<one line> -DVERSION=<v>
#         -DSEE_ALSO=<text> -DOUT=<file.1> -P gen_manpage.cmake
# The help text goes into a no-fill (.nf) block with troff's special
# characters escaped: a backslash becomes \e, and a line starting with . or '
# gets a zero-width \& in front so troff does not read it as a request.
foreach(var COMMAND NAME SUMMARY VERSION OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "gen_manpage.cmake: ${var} is not set")
  endif()
endforeach()

execute_process(COMMAND ${COMMAND} --help
  OUTPUT_VARIABLE help ERROR_VARIABLE help_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "gen_manpage.cmake: `${COMMAND} --help` failed (${rc}): ${help_err}")
endif()

string(REPLACE "\\" "\\e" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
string(TOUPPER "${NAME}" upper)
set(page ".TH ${upper} 1 \"\" \"gotrace ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\n${NAME} \\- ${SUMMARY}\n")
string(APPEND page ".SH DESCRIPTION\nThe text of\n.B ${NAME} --help\n(gotrace ${VERSION}):\n.PP\n.nf\n${help}.fi\n")
if(DEFINED SEE_ALSO AND NOT SEE_ALSO STREQUAL "")
  string(APPEND page ".SH SEE ALSO\n${SEE_ALSO}\n")
endif()
file(WRITE "${OUT}" "${page}")
