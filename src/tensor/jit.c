/* jit.c — tinygrad's TinyJit in C (engine/jit.py): call 0 runs the step, call 1 captures it (the engine records
 * every realize's CALLs instead of running them, engine.c), freezes the recording into a flat launch list and runs
 * it, later calls check the inputs as tinygrad does and replay the list with the new input buffers and Variable
 * values. A symbolic shape (an input view or an output whose sizes are expressions of the Variables in `vars`) is
 * captured with the bound values of the capture call and re-bound to each call's values: the kernels already take the
 * values as arguments, so one capture serves every value (tinygrad's test_symbolic_jit).
 * This file is the half that works on tensor handles: input preparation and checks (_prepare_jit_inputs), the three
 * phases, the output handles; it sits with the Tensor API because it reads handles, as the rest of src/tensor does.
 * The engine half (capture hook, freeze, replay) lives in src/engine/engine.c next to the kernels it launches. */
#include <stdio.h>

#include "engine/engine.h"
#include "tensor/tensor.h"
#include "uop/pattern.h"

struct tg_jit {
  tg_jit_fn fn;
  void *user;
  size_t nout;
  int cnt;          /* calls made: 0 run, 1 capture, >= 2 replay */
  int beam;         /* tg_jit_options.beam: BEAM for the captured kernels (0: JITBEAM, else BEAM as it is) */
  bool prune;       /* tg_jit_options.prune: calls that do not depend on the inputs run once, at capture */
  bool timing;
  double last_kernel_seconds;
  EngineJit *eng;
  /* expected input info (tinygrad expected_input_info), from the capture call */
  size_t nin, nvars;
  UOp **in_view;    /* kept: the input's node (a view of its base) */
  UOp **in_base;    /* kept: its BUFFER */
  Shape *in_shape;
  const char **in_device;
  char (*var_names)[TG_NAME_MAX];
  UOp **var_binds;  /* kept: the capture call's bound Variables (re-bound in symbolic views and shapes) */
  UOp **outs;       /* kept: the outputs' nodes after the capture (captured buffers or views of them) */
  SymShape *out_shape; /* its symbolic sizes kept by outs (views shrunk to them) */
  const char **out_device;
};

tg_jit *tg_jit_new(tg_jit_fn fn, void *user, size_t nout, const tg_jit_options *opts) {
  if (!fn) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_jit_new: fn is NULL"), NULL;
  if (opts && opts->beam < 0) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_jit_new: beam %d (0 or more)", opts->beam), NULL;
  tg_jit *j = tg_calloc(1, sizeof *j);
  j->beam = opts ? opts->beam : 0;
  j->prune = opts && opts->prune;
  j->fn = fn;
  j->user = user;
  j->nout = nout;
  return j;
}

void tg_jit_reset(tg_jit *j) {
  if (!j) return;
  UOpScope sc = uop_scope_begin();
  for (size_t i = 0; i < j->nin; i++) uop_drop(j->in_view[i]), uop_drop(j->in_base[i]);
  for (size_t i = 0; j->outs && i < j->nout; i++) uop_drop(j->outs[i]);
  for (size_t i = 0; j->var_binds && i < j->nvars; i++) uop_drop(j->var_binds[i]);
  for (size_t i = 0; j->out_shape && i < j->nout; i++)
    for (int k = 0; k < j->out_shape[i].max.ndim; k++)
      if (j->out_shape[i].sym[k]) uop_drop(j->out_shape[i].sym[k]);
  uop_scope_end(sc);
  engine_jit_free(j->eng);
  tg_free(j->in_view);
  tg_free(j->in_base);
  tg_free(j->in_shape);
  tg_free(j->in_device);
  tg_free(j->var_names);
  tg_free(j->var_binds);
  tg_free(j->outs);
  tg_free(j->out_shape);
  tg_free(j->out_device);
  tg_jit_fn fn = j->fn;
  void *user = j->user;
  size_t nout = j->nout;
  bool timing = j->timing;
  int beam = j->beam;
  bool prune = j->prune;
  memset(j, 0, sizeof *j);
  j->fn = fn, j->user = user, j->nout = nout, j->timing = timing, j->beam = beam, j->prune = prune;
}

void tg_jit_free(tg_jit *j) {
  if (!j) return;
  tg_jit_reset(j);
  tg_free(j);
}

size_t tg_jit_kernel_count(const tg_jit *j) { return j ? engine_jit_kernels(j->eng) : 0; }
size_t tg_jit_graph_count(const tg_jit *j) { return j ? engine_jit_graphs(j->eng) : 0; }
void tg_jit_set_timing(tg_jit *j, bool on) { if (j) j->timing = on; }
double tg_jit_last_kernel_seconds(const tg_jit *j) { return j ? j->last_kernel_seconds : 0; }

/* ---------------------------------------------------------------------------------------------- input checks */

/* The BUFFER under a view of one (movement ops only), or NULL. */
static UOp *view_base(UOp *u) {
  while (u && u->op != TG_OP_BUFFER) {
    if (!op_has(uop_op(u), OPP_MOVEMENT) || !u->nsrc) return NULL;
    u = u->src[0];
  }
  return u;
}

/* u is the same view of `base` as cap is of `cap_base`: the same movement ops with the same arguments (compared in
 * place: no node is built on the replay path). */
static bool same_view(const UOp *u, const UOp *base, const UOp *cap, const UOp *cap_base) {
  for (;;) {
    if (u == base || cap == cap_base) return u == base && cap == cap_base;
    if (u->op != cap->op || u->dtype != cap->dtype || u->nsrc != cap->nsrc || !u->nsrc || !uop_arg_eq(&u->arg, &cap->arg))
      return false;
    for (uint32_t i = 1; i < u->nsrc; i++)
      if (u->src[i] != cap->src[i]) return false; /* shape and bound arguments: interned constants */
    u = u->src[0], cap = cap->src[0];
  }
}

/* tinygrad _prepare_jit_inputs: realized, real buffers, no duplicates; bases and Variable values out. */
static tg_status prepare_inputs(tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars, UOp **bases,
                                int64_t *vals) {
  for (size_t i = 0; i < nin; i++) {
    tg_tensor *t = in ? in[i] : NULL;
    if (!t) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_jit_call: input %zu is NULL", i);
    if (!t->device || dt_is_weak(t->uop->dtype) || uop_is_variable(t->uop) || uop_unbind(t->uop, NULL, NULL))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT,
                          "JIT inputs must be real buffers; use tg_contiguous (input %zu: %s %s without storage)", i,
                          mix_fmt_shape(&t->shape), t->uop->dtype->name);
    if (!view_base(t->uop)) {
      tg_status st = tg_realize(t);
      if (st != TG_OK) return st;
    }
    bases[i] = view_base(t->uop);
    if (!bases[i])
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "JIT inputs must be real buffers; use tg_contiguous (input %zu is %s)",
                          i, uop_op_name(uop_op(t->uop)));
    for (size_t k = 0; k < i; k++)
      if (bases[k] == bases[i]) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "duplicate inputs to JIT (inputs %zu and %zu)", k, i);
  }
  for (size_t i = 0; i < nvars; i++) {
    UOp *var = NULL;
    if (!vars || !vars[i] || !uop_unbind(vars[i]->uop, &var, &vals[i]))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_jit_call: vars[%zu] is not a bound Variable (tg_bind)", i);
  }
  return TG_OK;
}

/* u with the capture call's bound Variables replaced by this call's (by position in vars; the names match). */
static UOp *rebind(const tg_jit *j, UOp *u, tg_tensor *const *vars) {
  UOp *to_small[8] = {0};
  UOp **to = j->nvars <= 8 ? to_small : tg_calloc(j->nvars, sizeof *to);
  for (size_t i = 0; i < j->nvars; i++) to[i] = vars[i]->uop;
  UOp *r = uop_substitute(u, j->var_binds, to, j->nvars);
  if (to != to_small) tg_free(to);
  return r;
}

/* The bound Variables in a symbolic view or shape must be among vars (else a replay would keep the capture's value
 * in the kernels while the view says another). */
static tg_status check_vars_known(UOp *u, tg_tensor *const *vars, size_t nvars, const char *what, size_t idx) {
  UOpVec topo = {0};
  uop_toposort(u, NULL, NULL, &topo);
  tg_status st = TG_OK;
  for (size_t k = 0; k < topo.len && st == TG_OK; k++) {
    UOp *var;
    if (!uop_unbind(topo.data[k], &var, NULL)) continue;
    bool found = false;
    for (size_t i = 0; i < nvars && !found; i++) found = vars[i]->uop == topo.data[k];
    if (!found)
      st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "JIT: %s %zu has a symbolic shape with Variable %s: pass that bound Variable in vars", what, idx,
                        var->arg.param->name);
  }
  tg_vec_free(&topo);
  return st;
}

/* tinygrad's check against expected_input_info. */
static tg_status check_inputs(const tg_jit *j, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                              UOp *const *bases) {
  if (nin != j->nin || nvars != j->nvars)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "args mismatch in JIT: %zu inputs and %zu Variables, captured with %zu and %zu",
                        nin, nvars, j->nin, j->nvars);
  for (size_t i = 0; i < nin; i++) {
    char a[160], b[160];
    const tg_tensor *t = in[i];
    if (!shape_eq(&t->shape, &j->in_shape[i]) || t->uop->dtype != j->in_view[i]->dtype || t->device != j->in_device[i])
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "args mismatch in JIT: input %zu is %s %s on %s, captured as %s %s on %s",
                          i, shape_fmt(&t->shape, a, sizeof a), t->uop->dtype->name, t->device,
                          shape_fmt(&j->in_shape[i], b, sizeof b), j->in_view[i]->dtype->name, j->in_device[i]);
    bool view_ok = bases[i]->dtype == j->in_base[i]->dtype && bases[i]->src[0] == j->in_base[i]->src[0];
    if (view_ok && t->symbolic) { /* the captured view with this call's values */
      UOpScope sc = uop_scope_begin();
      view_ok = same_view(t->uop, bases[i], rebind(j, j->in_view[i], vars), j->in_base[i]);
      uop_scope_end(sc);
    } else if (view_ok) view_ok = same_view(t->uop, bases[i], j->in_view[i], j->in_base[i]);
    if (!view_ok)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "args mismatch in JIT: input %zu is another view of its buffer than at capture", i);
  }
  for (size_t i = 0; i < nvars; i++) {
    const char *name = tg_variable_name(vars[i]);
    if (!name || strcmp(name, j->var_names[i]) != 0)
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "args mismatch in JIT: Variable %zu is %s, captured as %s", i,
                          name ? name : "?", j->var_names[i]);
  }
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------------ the phases */

static tg_status run_fn(tg_jit *j, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars, tg_tensor **out) {
  for (size_t i = 0; i < j->nout; i++) out[i] = NULL;
  tg_status st = j->fn(j->user, in, nin, vars, nvars, out, j->nout);
  if (st != TG_OK) return st;
  for (size_t i = 0; i < j->nout; i++)
    if (!out[i]) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "JIT: the step returned no tensor for output %zu", i);
  return j->nout ? tg_realize_many(out, j->nout) : TG_OK;
}

static tg_status capture(tg_jit *j, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars,
                         tg_tensor **out, UOp *const *bases, const int64_t *vals) {
  tg_status st = engine_capture_begin();
  if (st != TG_OK) return st;
  st = run_fn(j, in, nin, vars, nvars, out);
  EngineJit *eng = engine_capture_end();
  if (st == TG_OK && engine_jit_calls(eng) == 0) st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "didn't JIT anything!");
  if (st != TG_OK) {
    /* what was recorded before the failure still runs (once, as recorded): the handles already point at its
     * buffers, which must hold their values (nothing corrupted) */
    if (engine_jit_calls(eng)) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", tg_last_error());
      if (engine_jit_freeze(eng, NULL, 0, NULL, 0) == TG_OK) (void)engine_jit_run(eng, NULL, NULL, NULL);
      tg_set_error(st, "%s", msg);
    }
    engine_jit_free(eng);
    return st;
  }
  if (j->prune) {
    size_t before = engine_jit_calls(eng), pruned = 0;
    st = engine_jit_prune(eng, bases, nin, &pruned);
    if (st != TG_OK) {
      engine_jit_free(eng);
      return st;
    }
    if (tg_debug_level() >= 1) printf("pruned from %zu -> %zu calls\n", before, before - pruned);
  }
  const char **names = tg_calloc(nvars + 1, sizeof *names);
  j->var_names = tg_calloc(nvars + 1, sizeof *j->var_names);
  for (size_t i = 0; i < nvars; i++) {
    snprintf(j->var_names[i], TG_NAME_MAX, "%s", tg_variable_name(vars[i]));
    names[i] = j->var_names[i];
  }
  st = engine_jit_freeze(eng, bases, nin, names, nvars);
  tg_free(names);
  if (st == TG_OK) st = engine_jit_run(eng, bases, vals, NULL);
  /* after the run (the handles already point at its buffers): symbolic shapes must use Variables of vars */
  for (size_t i = 0; i < nin && st == TG_OK; i++)
    if (in[i]->symbolic) st = check_vars_known(in[i]->uop, vars, nvars, "input", i);
  for (size_t i = 0; i < j->nout && st == TG_OK; i++)
    if (out[i]->symbolic) st = check_vars_known(out[i]->uop, vars, nvars, "output", i);
  if (st != TG_OK) {
    engine_jit_free(eng);
    tg_free(j->var_names);
    j->var_names = NULL;
    return st;
  }
  j->eng = eng;
  j->nin = nin;
  j->nvars = nvars;
  j->in_view = tg_calloc(nin + 1, sizeof *j->in_view);
  j->in_base = tg_calloc(nin + 1, sizeof *j->in_base);
  j->in_shape = tg_calloc(nin + 1, sizeof *j->in_shape);
  j->in_device = tg_calloc(nin + 1, sizeof *j->in_device);
  for (size_t i = 0; i < nin; i++) {
    j->in_view[i] = uop_keep(in[i]->uop);
    j->in_base[i] = uop_keep(bases[i]);
    j->in_shape[i] = in[i]->shape;
    j->in_device[i] = in[i]->device;
  }
  j->var_binds = tg_calloc(nvars + 1, sizeof *j->var_binds);
  for (size_t i = 0; i < nvars; i++) j->var_binds[i] = uop_keep(vars[i]->uop);
  j->outs = tg_calloc(j->nout + 1, sizeof *j->outs);
  j->out_shape = tg_calloc(j->nout + 1, sizeof *j->out_shape);
  j->out_device = tg_calloc(j->nout + 1, sizeof *j->out_device);
  for (size_t i = 0; i < j->nout; i++) {
    j->outs[i] = uop_keep(out[i]->uop);
    j->out_shape[i] = tensor_handle_shape(out[i]);
    for (int k = 0; k < j->out_shape[i].max.ndim; k++)
      if (j->out_shape[i].sym[k]) uop_keep(j->out_shape[i].sym[k]);
    j->out_device[i] = out[i]->device;
  }
  return TG_OK;
}

tg_status tg_jit_call(tg_jit *j, tg_tensor *const *in, size_t nin, tg_tensor *const *vars, size_t nvars, tg_tensor **out) {
  if (!j) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_jit_call: the JIT is NULL");
  if (j->nout && !out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_jit_call: out is NULL for %zu outputs", j->nout);
  if (engine_capturing()) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "JIT: nested JIT capture is not supported (a JIT is capturing)");
  UOp *bases_small[8];
  int64_t vals_small[8];
  UOp **bases = nin <= 8 ? bases_small : tg_calloc(nin, sizeof *bases);
  int64_t *vals = nvars <= 8 ? vals_small : tg_calloc(nvars, sizeof *vals);
  tg_status st = prepare_inputs(in, nin, vars, nvars, bases, vals);
  if (st != TG_OK) goto done;
  if (tg_getenv_int("JIT", 1) == 0 || j->cnt == 0) {
    /* tinygrad: the first call runs with BEAM=0 under IGNORE_JIT_FIRST_BEAM (the capture searches) */
    bool no_beam = j->cnt == 0 && tg_getenv_int("IGNORE_JIT_FIRST_BEAM", 0) && tg_getenv_int("JIT", 1) != 0;
    TgKnobSaved beam = {0, false};
    if (no_beam) beam = tg_knob_put("BEAM", (TgKnobSaved){0, false});
    st = run_fn(j, in, nin, vars, nvars, out);
    if (no_beam) tg_knob_put("BEAM", beam);
    if (st == TG_OK && j->cnt == 0) j->cnt = 1;
  } else if (j->cnt == 1) {
    /* the captured kernels are made with BEAM = the JIT's beam, else JITBEAM, else BEAM (tinygrad's
     * compile_linear(beam=JITBEAM or BEAM)); the kernel cache is keyed with BEAM, so they are made anew */
    int64_t jb = j->beam > 0 ? j->beam : tg_getenv_int("JITBEAM", 0);
    TgKnobSaved beam = {0, false};
    if (jb > 0) beam = tg_knob_put("BEAM", (TgKnobSaved){jb, true});
    st = capture(j, in, nin, vars, nvars, out, bases, vals);
    if (jb > 0) tg_knob_put("BEAM", beam);
    if (st == TG_OK) j->cnt = 2;
  } else {
    st = check_inputs(j, in, nin, vars, nvars, bases);
    double ks = 0;
    if (st == TG_OK) st = engine_jit_run(j->eng, bases, vals, j->timing ? &ks : NULL);
    j->last_kernel_seconds = ks;
    for (size_t i = 0; i < j->nout && st == TG_OK; i++) {
      if (!shape_sym_is_symbolic(&j->out_shape[i])) {
        out[i] = tensor_handle_known(j->outs[i], &j->out_shape[i].max, j->out_device[i]);
        continue;
      }
      UOpScope sc = uop_scope_begin(); /* the captured view and shape with this call's values */
      SymShape os = j->out_shape[i];
      for (int k = 0; k < os.max.ndim; k++)
        if (os.sym[k]) os.sym[k] = rebind(j, os.sym[k], vars);
      out[i] = tensor_handle_known_sym(rebind(j, j->outs[i], vars), &os, j->out_device[i]);
      uop_scope_end(sc);
    }
  }
done:
  if (bases != bases_small) tg_free(bases);
  if (vals != vals_small) tg_free(vals);
  return st;
}
