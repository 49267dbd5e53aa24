/* device.c — the scheduler's device questions, answered by the device's renderer (tinygrad Device[d].renderer). */
#include "schedule/sched_device.h"

#include "render/render.h"

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
