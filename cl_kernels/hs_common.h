/* Shared by every hetsage OpenCL program: id and offset types.
 * Prepended to each program's source by the device layer. */
#ifndef HS_COMMON_CL_H
#define HS_COMMON_CL_H

typedef long hs_off_t; /* CSR offsets: 64-bit, graphs may exceed 2^31 edges */
typedef int hs_vid_t;  /* vertex ids: 32-bit on the device */

#endif
