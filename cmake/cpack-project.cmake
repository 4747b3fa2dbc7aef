# cmake/cpack-project.cmake: read by cpack once per generator.
#
# The console (docs/ui.md) uses Bootstrap 5 and Chart.js 3 from
# /usr/share/javascript, where the .deb's dependencies libjs-bootstrap5
# and libjs-chart.js put them.  RPM systems have no such packages, so the
# .rpm carries the same files, taken at packaging time from the Debian
# packages on the machine that builds it (scripts/deps installs them),
# with their copyright notices.  Nothing is fetched.
if(CPACK_GENERATOR STREQUAL "RPM")
  set(CPACK_INSTALLED_DIRECTORIES
    /usr/share/javascript/bootstrap5 /usr/share/javascript/bootstrap5
    /usr/share/javascript/chart.js /usr/share/javascript/chart.js)
  foreach(d /usr/share/javascript/bootstrap5 /usr/share/javascript/chart.js)
    if(NOT EXISTS ${d}/)
      message(FATAL_ERROR "${d} is missing: install libjs-bootstrap5 and libjs-chart.js (scripts/deps)")
    endif()
  endforeach()
endif()
