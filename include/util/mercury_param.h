/**
 * @file mercury_param.h
 * Mercury's small arithmetic macros (MAX, MIN, powerof2), each defined only
 * when the system headers have not defined it already.
 */
#ifndef MERCURY_PARAM_H
#define MERCURY_PARAM_H

#include "mercury_util_config.h"

#ifndef MAX
#define MAX(a, b) (((a) > (b)) ? (a) : (b)) /**< larger of a and b */
#endif
#ifndef MIN
#define MIN(a, b) (((a) < (b)) ? (a) : (b)) /**< smaller of a and b */
#endif
#ifndef powerof2
#define powerof2(x) ((((x)-1) & (x)) == 0) /**< true for 0 and powers of two */
#endif

#endif /* MERCURY_PARAM_H */
