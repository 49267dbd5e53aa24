/* parse.h — read UOp graphs written as explicit s-expressions, the exchange format between tinygrad (whose graphs are
 * dumped by tools/ scripts) and our tests:
 *
 *   (OP.dtype[=arg] src...)
 *
 * args: i:<int> f:<python float repr> b:<0|1> inv (CONST), var:<name>:<lo>:<hi> (a Variable: BUFFER in the ALU
 * address space), param:<slot>:<name or ->:<addrspace> (PARAM/BUFFER), rng:<ids joined by _>:<AxisType>, s:<string>,
 * red:<OP>:<n>, perm:<ints,>, flip:<0/1,>, wmma:<N,M,K,dtype_in,dtype_out,threads> (a contracted WMMA). dtypes by name as dt_by_name reads them ("float", "float.ptr(16)").
 * Shared nodes are simply written again (interning makes them one node), or written once as "(@k OP...)" and referred
 * to later as "@k". Also: param:<slot>:<name or ->:<addrspace>:<device> (a device), kern:<name> (a KernelInfo),
 * param:<slot>:<name>:<addrspace>:<device or empty>:<lo>:<hi> (a Variable PARAM with its value range, e.g. core_id). */
#ifndef TG_PARSE_H
#define TG_PARSE_H

#include "uop.h"

/* The graph, owned by the current scope; NULL with tg_last_error() on a syntax error. */
UOp *uop_parse(const char *text);

#endif
