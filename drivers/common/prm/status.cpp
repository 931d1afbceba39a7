#include "status.hpp"
