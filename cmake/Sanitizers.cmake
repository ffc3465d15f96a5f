# MPES_SANITIZE=ON builds everything with AddressSanitizer + UndefinedBehaviorSanitizer.
option(MPES_SANITIZE "Build with ASan+UBSan" OFF)
if(MPES_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()
