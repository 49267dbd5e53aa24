/* state.c — state dicts (tinygrad's nn/state.py get_state_dict / get_parameters / load_state_dict), the global
 * training flag (tinygrad's TRAINING context variable) and the small helpers the other nn files share. */
#include "nn/nn.h"

#include <stdio.h>
#include <stdlib.h>

/* A state dict is an ordered list of (name, tensor) in insertion order (tinygrad's get_state_dict walks a model's
 * attributes in order; files written from it keep that order). Lookups are linear: models have hundreds of entries,
 * and loading touches each once. */
typedef struct sd_entry {
  char *name;
  tg_tensor *tensor; /* a reference owned by the dict */
  bool is_param;
} sd_entry;

/* String metadata (safetensors' __metadata__) travels with the dict and is written back with it. */
typedef struct sd_meta {
  char *key, *value;
} sd_meta;

struct tg_state_dict {
  TG_VEC(sd_entry) entries;
  TG_VEC(sd_meta) meta;
};

/* tinygrad's Tensor.training: dropout and batchnorm read it; tg_set_training returns the old value so a caller can
 * restore it (tinygrad's `with Tensor.train():`). */
static bool training_flag = false;

bool tg_set_training(bool on) {
  bool prev = training_flag;
  training_flag = on;
  return prev;
}
bool tg_is_training(void) { return training_flag; }

/* The nn functions build from public tg_* calls inside a scope of their own: the result is kept out of it, every
 * intermediate handle dies with it. One helper so each layer ends the same way. */
tg_tensor *nn_finish(tg_scope s, tg_tensor *r) {
  tg_scope_keep(r);
  tg_scope_end(s);
  return r;
}

/* A new handle for the same value (an identity view), for functions that return their input unchanged: the caller
 * owns a handle either way, and releasing it never frees the argument. */
tg_tensor *nn_same(const tg_tensor *t) {
  if (!t) return NULL;
  if (tg_is_symbolic(t)) { /* -1 keeps each size, symbolic ones too */
    tg_sint keep[TG_MAX_DIMS];
    for (int i = 0; i < tg_ndim(t); i++) keep[i] = TG_SI(-1);
    return tg_expand_sym(t, keep, (size_t)tg_ndim(t));
  }
  return tg_reshape(t, tg_shape(t), (size_t)tg_ndim(t));
}

tg_state_dict *tg_state_dict_new(void) { return tg_calloc(1, sizeof(tg_state_dict)); }

void tg_state_dict_free(tg_state_dict *sd) {
  if (!sd) return;
  for (size_t i = 0; i < sd->entries.len; i++) {
    tg_free(sd->entries.data[i].name);
    tg_release(sd->entries.data[i].tensor);
  }
  for (size_t i = 0; i < sd->meta.len; i++) {
    tg_free(sd->meta.data[i].key);
    tg_free(sd->meta.data[i].value);
  }
  tg_vec_free(&sd->entries);
  tg_vec_free(&sd->meta);
  tg_free(sd);
}

static long find_entry(const tg_state_dict *sd, const char *name) {
  for (size_t i = 0; i < sd->entries.len; i++)
    if (strcmp(sd->entries.data[i].name, name) == 0) return (long)i;
  return -1;
}

/* The dict retains t (the caller keeps its own reference); is_param marks what an optimizer updates, the rest are
 * buffers (running statistics), as tinygrad's get_parameters vs get_state_dict. */
tg_status tg_state_dict_add(tg_state_dict *sd, const char *name, tg_tensor *t, bool is_param) {
  if (!sd || !name) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_state_dict_add: NULL state dict or name");
  if (!t) {
    if (tg_last_status() != TG_OK) return tg_last_status();
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_state_dict_add: NULL tensor for \"%s\"", name);
  }
  if (find_entry(sd, name) >= 0)
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_state_dict_add: duplicate name \"%s\"", name);
  sd_entry e = {tg_strdup(name), tg_retain(t), is_param};
  tg_vec_push(&sd->entries, e);
  return TG_OK;
}

size_t tg_state_dict_len(const tg_state_dict *sd) { return sd ? sd->entries.len : 0; }
const char *tg_state_dict_name(const tg_state_dict *sd, size_t i) {
  return sd && i < sd->entries.len ? sd->entries.data[i].name : NULL;
}
tg_tensor *tg_state_dict_tensor(const tg_state_dict *sd, size_t i) {
  return sd && i < sd->entries.len ? sd->entries.data[i].tensor : NULL;
}
bool tg_state_dict_is_param(const tg_state_dict *sd, size_t i) {
  return sd && i < sd->entries.len && sd->entries.data[i].is_param;
}
tg_tensor *tg_state_dict_get(const tg_state_dict *sd, const char *name) {
  if (!sd || !name) return NULL;
  long i = find_entry(sd, name);
  return i < 0 ? NULL : sd->entries.data[i].tensor;
}

static size_t list_entries(const tg_state_dict *sd, bool params, tg_tensor **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; sd && i < sd->entries.len; i++) {
    if (sd->entries.data[i].is_param != params) continue;
    if (out && n < max) out[n] = sd->entries.data[i].tensor;
    n++;
  }
  return n;
}
size_t tg_state_dict_parameters(const tg_state_dict *sd, tg_tensor **out, size_t max) {
  return list_entries(sd, true, out, max);
}
size_t tg_state_dict_buffers(const tg_state_dict *sd, tg_tensor **out, size_t max) {
  return list_entries(sd, false, out, max);
}

/* Realize every entry in one call: one schedule, so the initializers of a whole model compile and run together. */
tg_status tg_state_dict_realize(const tg_state_dict *sd) {
  if (!sd) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_state_dict_realize: NULL state dict");
  if (!sd->entries.len) return TG_OK;
  tg_tensor **ts = tg_malloc(sd->entries.len * sizeof *ts);
  for (size_t i = 0; i < sd->entries.len; i++) ts[i] = sd->entries.data[i].tensor;
  tg_status st = tg_realize_many(ts, sd->entries.len);
  tg_free(ts);
  return st;
}

static bool same_shape(const tg_tensor *a, const tg_tensor *b) {
  if (tg_ndim(a) != tg_ndim(b)) return false;
  for (int i = 0; i < tg_ndim(a); i++)
    if (tg_shape(a)[i] != tg_shape(b)[i]) return false;
  return true;
}

/* () and (1,) load into each other, as in tinygrad */
static bool scalar_like_pair(const tg_tensor *a, const tg_tensor *b) {
  return tg_numel(a) == 1 && tg_numel(b) == 1 && tg_ndim(a) <= 1 && tg_ndim(b) <= 1;
}

static const char *shape_text(const tg_tensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < tg_ndim(t) && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)tg_shape(t)[i]);
  if (k < n) snprintf(buf + k, n - k, ")");
  return buf;
}

/* tinygrad load_state_dict: each model tensor gets its source's value by assign (so handles held elsewhere, e.g. by
 * an optimizer, see the new weights), reshaped between () and (1,) and cast to the model's dtype. strict: a missing
 * name is an error; extra names in src are ignored (tinygrad only warns about them). */
tg_status tg_load_state_dict(tg_state_dict *model, const tg_state_dict *src, bool strict) {
  if (!model || !src) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_load_state_dict: NULL state dict");
  /* validate everything first so a failure changes nothing */
  for (size_t i = 0; i < model->entries.len; i++) {
    const sd_entry *e = &model->entries.data[i];
    tg_tensor *v = tg_state_dict_get(src, e->name);
    if (!v) {
      if (strict) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_load_state_dict: \"%s\" missing from the state dict", e->name);
      continue;
    }
    if (!same_shape(e->tensor, v) && !scalar_like_pair(e->tensor, v)) {
      char a[256], b[256];
      return tg_set_error(TG_ERR_INVALID_ARGUMENT,
                          "tg_load_state_dict: shape mismatch in \"%s\": expected shape %s, but found %s in state dict",
                          e->name, shape_text(e->tensor, a, sizeof a), shape_text(v, b, sizeof b));
    }
    if (tg_get_dtype(v) == TG_WEAKINT || tg_get_dtype(v) == TG_WEAKFLOAT || !tg_device(e->tensor))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_load_state_dict: \"%s\": cannot load a weak scalar or into one",
                          e->name);
  }
  tg_status st = TG_OK;
  tg_scope s = tg_scope_begin();
  for (size_t i = 0; i < model->entries.len && st == TG_OK; i++) {
    sd_entry *e = &model->entries.data[i];
    tg_tensor *v = tg_state_dict_get(src, e->name);
    if (!v) continue;
    /* the target gets a buffer of its own first, so the assign writes into it */
    if ((st = tg_realize(e->tensor)) != TG_OK) break;
    tg_tensor *x = v;
    if (!same_shape(e->tensor, v)) x = tg_reshape(x, tg_shape(e->tensor), (size_t)tg_ndim(e->tensor));
    if (tg_get_dtype(x) != tg_get_dtype(e->tensor)) x = tg_cast(x, tg_get_dtype(e->tensor));
    x = tg_contiguous(x);
    if (!x) { st = tg_last_status(); break; }
    if ((st = tg_assign(e->tensor, x)) != TG_OK) break;
    st = tg_realize(e->tensor);
  }
  tg_scope_end(s);
  return st;
}

tg_status tg_state_dict_set_metadata(tg_state_dict *sd, const char *key, const char *value) {
  if (!sd || !key || !value) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_state_dict_set_metadata: NULL argument");
  for (size_t i = 0; i < sd->meta.len; i++) {
    if (strcmp(sd->meta.data[i].key, key) != 0) continue;
    tg_free(sd->meta.data[i].value);
    sd->meta.data[i].value = tg_strdup(value);
    return TG_OK;
  }
  sd_meta m = {tg_strdup(key), tg_strdup(value)};
  tg_vec_push(&sd->meta, m);
  return TG_OK;
}

const char *tg_state_dict_metadata(const tg_state_dict *sd, const char *key) {
  for (size_t i = 0; sd && key && i < sd->meta.len; i++)
    if (strcmp(sd->meta.data[i].key, key) == 0) return sd->meta.data[i].value;
  return NULL;
}
size_t tg_state_dict_metadata_len(const tg_state_dict *sd) { return sd ? sd->meta.len : 0; }
const char *tg_state_dict_metadata_key(const tg_state_dict *sd, size_t i) {
  return sd && i < sd->meta.len ? sd->meta.data[i].key : NULL;
}

void tg_buffer_free(void *p) { tg_free(p); }
