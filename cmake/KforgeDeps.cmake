# Finds the distribution packages kforge builds on. Each dependency is found once
# here and exposed as an imported target, so folders only name targets.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

find_package(OpenCL REQUIRED)

# CUDA toolkit (NVRTC + <cuda.h>) for the cuda kernel target. libcuda itself is loaded at
# run time, so this builds, and compiles CUDA candidates, on machines without a GPU.
if(KFORGE_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::nvrtc)
    message(STATUS "kforge: CUDA toolkit not found: the cuda target is off (set CUDAToolkit_ROOT to enable)")
    set(KFORGE_WITH_CUDA OFF)
  endif()
endif()

if(KFORGE_WITH_TORCH)
  # Debian's libtorch-dev (1.13) or PyTorch 2.x (-DCMAKE_PREFIX_PATH=torch.utils.cmake_prefix_path).
  find_package(Torch REQUIRED)
  # TorchConfig puts its flags in TORCH_CXX_FLAGS; wrap everything in one target.
  add_library(kforge_torch INTERFACE)
  # libstdc++ first among the libraries a program loads: PyTorch 2.x's libtorch exports its
  # own std::filesystem (101 symbols in libtorch_cpu), and a program that loads libtorch
  # before libstdc++ binds std::filesystem::remove_all there and jumps to address 0
  # (seen on the H100 host: every test that cleans up a directory crashed).
  target_link_libraries(kforge_torch INTERFACE "-Wl,--push-state,--no-as-needed" stdc++ "-Wl,--pop-state"
                        ${TORCH_LIBRARIES})
  target_include_directories(kforge_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  # TORCH_CXX_FLAGS carries -D_GLIBCXX_USE_CXX11_ABI; it must hold for every
  # translation unit, not only torch users, or std::string crosses an ABI seam.
  if(TORCH_CXX_FLAGS)
    separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
    add_compile_options(${_torch_flags})
  endif()
endif()

if(KFORGE_WITH_SERVER)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET libpqxx)
  find_package(OpenSSL REQUIRED)
  if(KFORGE_WITH_HTTP)
    find_package(cpprestsdk REQUIRED)
  endif()
endif()

if(KFORGE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
