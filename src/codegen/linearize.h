/* linearize.h — tinygrad's linearizer (codegen/late/linearizer.py + do_linearize): the lowered kernel SINK (the
 * output of cg_lower) turned into one ordered list of UOps, the program order the renderer and the interpreter walk.
 *
 * The order is a priority toposort: PARAMs first by slot, then register/local BUFFERs, loads early, RANGEs as early
 * as their dependencies allow, stores and ENDs late, nodes that run in fewer loops before those that run in more.
 * Ties fall back to tinygrad's order (ops.def order of the op, then dtype, arg, sources). A gated STORE
 * (STORE idx val gate) becomes IF(gate, idx) / STORE(idx, val) / ENDIF. */
#ifndef TG_LINEARIZE_H
#define TG_LINEARIZE_H

#include "../uop/uop.h"

/* Returns LINEAR(src = the list, SINK last), owned by the current scope; NULL with tg_last_error() when the graph
 * is not a lowered kernel (an IF/ENDIF already present, a root that is not a SINK). */
UOp *cg_linearize(UOp *sink);

#endif
