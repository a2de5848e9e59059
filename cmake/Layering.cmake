# The layering of docs/Architecture.md, checked when CMake configures: every
# `#include "nnc/<Layer>/..."` in a library's sources and public headers must
# name the library itself or one it depends on (directly or transitively),
# or for a library with HEADERS_FROM one of those layers; the nnc-jit tool
# includes only the Driver. A violation stops the
# configuration with the file and the include.

function(nnc_layer_closure layer out)
  set(seen ${layer})
  set(work ${layer})
  while(work)
    list(POP_FRONT work current)
    get_property(deps GLOBAL PROPERTY NNC_LAYER_DEPS_${current})
    foreach(dep IN LISTS deps)
      if(NOT dep IN_LIST seen)
        list(APPEND seen ${dep})
        list(APPEND work ${dep})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# Fails if a file of `files` includes a layer outside `allowed`.
function(nnc_check_includes who allowed files)
  foreach(f IN LISTS files)
    file(STRINGS ${f} includes REGEX "^#include \"nnc/[A-Za-z]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"nnc/([A-Za-z]+)/.*" "\\1" layer "${line}")
      if(NOT layer IN_LIST allowed)
        message(FATAL_ERROR
          "layering: ${f} (${who}) includes nnc/${layer}, which ${who} does "
          "not depend on (allowed: ${allowed}); see docs/Architecture.md")
      endif()
    endforeach()
  endforeach()
endfunction()

get_property(nnc_layers GLOBAL PROPERTY NNC_LAYERS)
foreach(layer IN LISTS nnc_layers)
  get_property(allowed GLOBAL PROPERTY NNC_LAYER_HEADERS_FROM_${layer})
  if(allowed)
    list(APPEND allowed ${layer})
  else()
    nnc_layer_closure(${layer} allowed)
  endif()
  get_property(files GLOBAL PROPERTY NNC_LAYER_FILES_${layer})
  nnc_check_includes(${layer} "${allowed}" "${files}")
endforeach()
nnc_check_includes(nnc-jit "Driver"
                   "${PROJECT_SOURCE_DIR}/tools/nnc-jit/nnc-jit.cpp")
