# Loaded after every project() of the llama-cpp-python build (CMAKE_PROJECT_INCLUDE, set by
# .ci/run for the real-model lane's engine). llama-cpp-python forces llama.cpp's "common"
# library on (a cache variable set with FORCE), yet its Python bindings load only libllama and
# libggml: common (51 of the 127 objects, the heaviest C++: chat templates, argument parsing,
# JSON) and the cpp-httplib it needs are compiled for nothing. A normal variable set right after
# llama.cpp's own project() shadows the cache entry in that directory, so neither is built.
if(PROJECT_NAME STREQUAL "llama.cpp")
  set(LLAMA_BUILD_COMMON OFF)
endif()
