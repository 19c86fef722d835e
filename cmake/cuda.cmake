# The CUDA executor (src/exec/cuda). Included from CMakeLists.txt after the modules and before
# the tests. With nvcc (PACELINE_HAVE_CUDA) it builds two libraries: paceline_cuda_kernels (the
# .cu files, compiled by nvcc for the H200 only) and paceline_cuda (the host .cpp files, linked
# to the static CUDA runtime and to cuBLAS dynamically). Without nvcc, paceline_cuda is an empty
# interface library, so the CLI and tests/cuda still build and say that CUDA is absent.

if(PACELINE_HAVE_CUDA)
  find_package(CUDAToolkit REQUIRED)
  file(GLOB PACELINE_CUDA_KERNEL_SRCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/exec/cuda/*.cu)
  file(GLOB PACELINE_CUDA_HOST_SRCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/exec/cuda/*.cpp)

  add_library(paceline_cuda_kernels STATIC ${PACELINE_CUDA_KERNEL_SRCS})
  # The directory's g++ flags (-Wall, -march, ...) mean nothing to nvcc: replace them.
  set_property(TARGET paceline_cuda_kernels PROPERTY COMPILE_OPTIONS "")
  set_target_properties(paceline_cuda_kernels PROPERTIES
    CUDA_ARCHITECTURES 90a-real
    CUDA_STANDARD 17
    CUDA_RUNTIME_LIBRARY Static
    POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(paceline_cuda_kernels PRIVATE
    -O3 --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra
    $<$<BOOL:${PACELINE_WERROR}>:-Werror=all-warnings>)
  target_include_directories(paceline_cuda_kernels PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(paceline_cuda_kernels PUBLIC CUDA::cudart_static)

  add_library(paceline_cuda STATIC ${PACELINE_CUDA_HOST_SRCS})
  target_include_directories(paceline_cuda PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(paceline_cuda PUBLIC paceline_cuda_kernels paceline_exec paceline_model
                        CUDA::cudart_static CUDA::cublas CUDA::cublasLt)
  target_link_libraries(paceline_cuda PUBLIC ${CMAKE_DL_LIBS})  # CUPTI, loaded at run time
  target_compile_definitions(paceline_cuda PUBLIC PACELINE_HAVE_CUDA=1)
  message(STATUS "paceline: CUDA executor built for sm_90a (CUDA ${CUDAToolkit_VERSION})")
else()
  add_library(paceline_cuda INTERFACE)
  target_include_directories(paceline_cuda INTERFACE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(paceline_cuda INTERFACE paceline_exec paceline_model)
endif()
