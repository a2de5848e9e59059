# ctest's install-examples: installs the build into a fresh prefix, builds
# examples/ against it with find_package(nncjit), and runs every example.
# Run with -DBUILD_DIR= -DSOURCE_DIR= -DWORK_DIR= -DCXX= -DGENERATOR=.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE R OUTPUT_VARIABLE Out
                  ERROR_VARIABLE Out)
  if(R)
    message(FATAL_ERROR "failed (${R}): ${ARGN}\n${Out}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/examples
    -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/examples)
foreach(Example fused_elementwise parse_text loop_transforms conv_post_op
                threads)
  run(${WORK_DIR}/examples/${Example})
  message(STATUS "${Example}: ok")
endforeach()
# With libtorch and Python: a model optimized and saved by the installed
# Python package, run by the C++ example through nncjit::torch.
if(EXISTS ${WORK_DIR}/examples/torch_model AND PYTHON)
  run(${CMAKE_COMMAND} -E env
      PYTHONPATH=${WORK_DIR}/prefix/lib/python3/dist-packages ${PYTHON}
      ${SOURCE_DIR}/examples/save_model.py ${WORK_DIR}/model.pt ${WORK_DIR}/data.pt)
  run(${WORK_DIR}/examples/torch_model ${WORK_DIR}/model.pt ${WORK_DIR}/data.pt)
  message(STATUS "torch_model: ok")
  # The installed nnc-torch-run finds the operator library from the prefix
  # (its RPATH), without LD_LIBRARY_PATH.
  run(${WORK_DIR}/prefix/bin/nnc-torch-run --help)
  message(STATUS "nnc-torch-run: ok")
endif()
