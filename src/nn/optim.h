/* optim.h — optimizer internals shared with the tests: the step's tensors without realizing them (tinygrad's
 * Optimizer.schedule_step), so a test can schedule them and count kernels before running them. */
#ifndef TG_NN_OPTIM_H
#define TG_NN_OPTIM_H

#include "tinygrad.h"

/* Builds and assigns the step's updates and returns, in *out (tg_free it), the tensors a step realizes: `also`
 * first, then the optimizer state, the params and the buffers (borrowed handles). Realize them all together. */
tg_status optim_schedule_step(tg_optim *o, tg_tensor *const *also, size_t nalso, tg_tensor ***out, size_t *nout);

#endif
