# Warnings for Wick's own targets: -Wall -Wextra, errors in CI (WICK_WERROR).
function(wick_set_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wpedantic>)
  if(WICK_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:-Werror>)
  endif()
endfunction()
