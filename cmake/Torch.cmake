# tiledsl::torch (lib/torch, include/tiledsl/torch.h, torch_op.h): built when LibTorch is found,
# from the CMake files of a Python's torch (TILEDSL_TORCH_PYTHON, which scripts/setup-torch.sh
# prepares: the PyPI wheel) or a Torch_DIR. A static library, so that a custom-op library made
# of it holds one copy of tiledsl.
set(TILEDSL_TORCH_PYTHON "" CACHE FILEPATH "A Python whose torch package provides LibTorch for tiledsl::torch")
if(TILEDSL_TORCH_PYTHON)
  execute_process(COMMAND "${TILEDSL_TORCH_PYTHON}" -c "import sys, torch; sys.stdout.write(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE tiledsl_torch_prefix RESULT_VARIABLE tiledsl_torch_rc ERROR_QUIET)
  if(tiledsl_torch_rc EQUAL 0)
    list(APPEND CMAKE_PREFIX_PATH "${tiledsl_torch_prefix}")
  else()
    message(WARNING "TILEDSL_TORCH_PYTHON=${TILEDSL_TORCH_PYTHON} cannot import torch: tiledsl::torch is not built")
  endif()
endif()
# A CUDA torch's CMake files probe the GPUs by compiling CUDA code (in this project's C++20, which
# CMake 3.25 cannot give nvcc); nothing here is CUDA code, so name the architectures instead.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
endif()
find_package(Torch QUIET)
option(TILEDSL_BUILD_TORCH "Build tiledsl::torch (needs LibTorch)" ${Torch_FOUND})
if(NOT TILEDSL_BUILD_TORCH)
  return()
endif()
if(NOT Torch_FOUND)
  message(FATAL_ERROR "TILEDSL_BUILD_TORCH is ON but LibTorch was not found (set TILEDSL_TORCH_PYTHON or Torch_DIR)")
endif()
message(STATUS "tiledsl: building tiledsl::torch against LibTorch ${Torch_VERSION}")
add_library(tiledsl_torch STATIC lib/torch/Torch.cpp)
add_library(tiledsl::torch ALIAS tiledsl_torch)
set_target_properties(tiledsl_torch PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME torch)
target_link_libraries(tiledsl_torch PUBLIC tiledsl ${TORCH_LIBRARIES})
target_compile_options(tiledsl_torch PRIVATE -Wall -Wextra $<$<BOOL:${TILEDSL_WERROR}>:-Werror>)
# torch's CUDA streams (c10_cuda) where this torch has CUDA; their headers include the toolkit's.
if(TORCH_LIBRARIES MATCHES "c10_cuda")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    target_compile_definitions(tiledsl_torch PRIVATE TILEDSL_TORCH_CUDA)
    target_link_libraries(tiledsl_torch PRIVATE CUDA::toolkit)
  endif()
endif()
install(TARGETS tiledsl_torch EXPORT tiledslTorchTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT tiledslTorchTargets NAMESPACE tiledsl:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tiledsl)
