// ops_reduce.cpp — see tensor.hpp for the API this file implements.
#include "ops_common.hpp"
