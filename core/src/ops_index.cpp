// ops_index.cpp — see tensor.hpp for the API this file implements.
#include "ops_common.hpp"
