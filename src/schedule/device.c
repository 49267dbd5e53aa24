/* device.c — the scheduler's device questions, answered by the device's renderer (tinygrad Device[d].renderer). */
#include "schedule/sched_device.h"

#include "render/render.h"

/* CONTIG_HINTS=0 drops every hinted copy, =1 makes every one (the H200's A/B of the old graph), =2 only the unmasked
 * copies, =3 only the layout copies; unset, the renderer decides. A device without a renderer (DISK, or one not
 * built) asks for none; the error its lookup set is not kept. */
bool sched_device_wants_copy(const char *device, int hint) {
  int64_t knob = tg_getenv_int("CONTIG_HINTS", -1);
  if (knob == 2 || knob == 3) return hint == (knob == 2 ? CONTIG_HINT_UNMASKED : CONTIG_HINT_LAYOUT);
  if (knob >= 0) return knob != 0;
  if (!device || !*device) return false;
  bool had_error = tg_last_status() != TG_OK;
  const Renderer *r = renderer_for_device(device);
  if (!r && !had_error) tg_clear_error();
  if (!r) return false;
  if (hint == CONTIG_HINT_UNMASKED) return r->gated_loads_expensive;
  if (hint == CONTIG_HINT_LAYOUT) return r->channel_inner_vectors;
  return true;
}

bool sched_device_is_cpu(const char *device) {
  if (!device || !*device) return false;
  bool had_error = tg_last_status() != TG_OK;
  const Renderer *r = renderer_for_device(device);
  if (!r && !had_error) tg_clear_error(); /* a device without a renderer (yet) is simply not the CPU */
  return r == renderer_clang();
}

int sched_device_row_fuse(const char *device) {
  if (!device || !*device) return 0;
  bool had_error = tg_last_status() != TG_OK;
  const Renderer *r = renderer_for_device(device);
  if (!r && !had_error) tg_clear_error();
  if (!r) return 0;
  if (r == renderer_clang()) return 1;
  return r->has_local && r->has_shared && !r->has_threads ? 2 : 0;
}
