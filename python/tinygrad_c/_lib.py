"""tinygrad_c._lib — loads libtinygrad.so with ctypes and declares the C API (include/tinygrad.h) it uses.

The library is found at $TINYGRAD_C_LIB, else ../../build/libtinygrad.so from this file (the repository's build).
Every prototype is declared once below ("name restype argtypes", one letter per C type) so that ctypes converts
arguments without guessing; tensor handles are opaque pointers (Python ints).

Per-op cost: building a lazy op is a sub-microsecond C call, so `lib` is loaded as a PyDLL (the call keeps the GIL:
releasing and taking it back was about a fifth of a cheap call). The calls that run kernels or differentiate (_SLOW
below) go through a CDLL instead, so other Python threads run meanwhile. A dead Tensor's handle is queued (`pending`,
see Tensor.__del__) and released with others in one tg_release_many call: before every _SLOW call (a realize or a
backward walks every live handle, and the graphs of dead tensors must neither cost it nor hold memory through it),
when 256 are queued, and at interpreter exit."""
import array, atexit, ctypes, os

_here = os.path.dirname(os.path.abspath(__file__))
LIB_PATH = os.environ.get("TINYGRAD_C_LIB") or os.path.join(_here, "..", "..", "build", "libtinygrad.so")
if not os.path.exists(LIB_PATH):
  raise ImportError(f"tinygrad_c: {LIB_PATH} not found: build it with `make lib` (or set TINYGRAD_C_LIB)")
lib = ctypes.PyDLL(LIB_PATH)
_gil_free = ctypes.CDLL(LIB_PATH)

I64P, IP = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int)
_T = {"T": ctypes.c_void_p, "P": ctypes.c_void_p, "v": ctypes.c_void_p, "s": ctypes.c_char_p, "Z": ctypes.c_size_t,
      "i": ctypes.c_int, "b": ctypes.c_bool, "d": ctypes.c_double, "q": ctypes.c_int64, "Q": ctypes.c_uint64,
      "L": ctypes.c_void_p, "I": ctypes.c_void_p, "-": None}
# name, return type, argument types: T tensor handle, P array of handles, L int64_t*, I int*, Z size_t, i int/enum,
# b bool, d double, q int64_t, Q uint64_t, s const char*, v other pointer, - void. The int64_t*/int* arguments are
# declared void*: they take a ctypes array as before, or the address of a cached one (an int) without the per-call
# type check of a POINTER argument.
_PROTOS = """
tg_last_error s -|tg_last_status i -|tg_version s -|tg_knobs_reload - -|tg_retain T T|tg_release - T|tg_release_many - vZ|tg_live_tensors Z -
tg_ndim i T|tg_shape v T|tg_numel q T|tg_get_dtype i T|tg_dtype_name s i|tg_dtype_itemsize Z i|tg_device s T
tg_graph_str v T|tg_str_free - v|tg_default_device s -|tg_set_default_device i s|tg_to T Ts|tg_synchronize i s
tg_from_data_on T viLZs|tg_empty_on T LZis|tg_zeros T LZi|tg_ones T LZi|tg_full T LZdi|tg_full_int T LZqi
tg_full_like T Tdi|tg_zeros_like T Ti|tg_ones_like T Ti|tg_empty_like T Ti|tg_arange T dddi|tg_linspace T ddqi
tg_eye T qqi|tg_const_float T d|tg_const_int T q|tg_const_bool T b|tg_scalar T di
tg_variable T sqq|tg_bind T Tq|tg_is_variable b T|tg_variable_value i TL|tg_variable_name s T
tg_manual_seed - Q|tg_rand T LZi|tg_randn T LZi|tg_randint T LZqqi|tg_uniform T LZddi|tg_normal T LZddi
tg_rand_like T T|tg_randn_like T T
tg_add T TT|tg_sub T TT|tg_mul T TT|tg_div T TT|tg_div_mode T TTi|tg_idiv T TT|tg_mod T TT|tg_fmod T TT|tg_pow T TT
tg_maximum T TT|tg_minimum T TT|tg_lt T TT|tg_le T TT|tg_gt T TT|tg_ge T TT|tg_eq T TT|tg_ne T TT|tg_where T TTT
tg_bitwise_and T TT|tg_bitwise_or T TT|tg_bitwise_xor T TT|tg_bitwise_not T T|tg_logical_not T T|tg_lshift T TT
tg_rshift T TT|tg_neg T T|tg_abs T T|tg_sign T T|tg_exp T T|tg_exp2 T T|tg_log T T|tg_log2 T T|tg_sqrt T T
tg_rsqrt T T|tg_reciprocal T T|tg_square T T|tg_sin T T|tg_cos T T|tg_tan T T|tg_trunc T T|tg_floor T T|tg_ceil T T
tg_round T T|tg_clamp T Tdd|tg_isnan T T|tg_isinf T T|tg_isfinite T T|tg_relu T T|tg_relu6 T T|tg_sigmoid T T
tg_hardsigmoid T T|tg_tanh T T|tg_gelu T T|tg_quick_gelu T T|tg_silu T T|tg_swish T T|tg_hardswish T T
tg_softplus T Td|tg_softsign T T|tg_mish T T|tg_leaky_relu T Td|tg_elu T Td|tg_celu T Td|tg_selu T T
tg_hardtanh T Tdd|tg_logsigmoid T T|tg_erf T T|tg_sinh T T|tg_log10 T T|tg_asin T T|tg_acos T T|tg_atan T T
tg_asinh T T|tg_acosh T T|tg_atanh T T|tg_copysign T TT|tg_logaddexp T TT|tg_lerp T TTT|tg_masked_fill T TTT
tg_cosh T T|tg_cast T Ti|tg_bitcast T Ti
tg_sum T TIZb|tg_prod T TIZb|tg_max T TIZb|tg_min T TIZb|tg_mean T TIZb|tg_var T TIZbd|tg_std T TIZbd
tg_any T TIZb|tg_all T TIZb|tg_logsumexp T Tib|tg_argmax T Tib|tg_argmax_all T T|tg_argmin T Tib|tg_cumsum T Ti
tg_softmax T Ti|tg_log_softmax T Ti|tg_cumprod T Ti|tg_cummax T Tiv|tg_cummin T Tiv|tg_logcumsumexp T Ti
tg_reshape T TLZ|tg_permute T TIZ|tg_transpose T Tii|tg_expand T TLZ|tg_pad T TLZid|tg_shrink T TLZ|tg_flip T TIZ
tg_squeeze T Ti|tg_squeeze_all T T|tg_unsqueeze T Ti|tg_flatten T Tii|tg_getitem T TvZ|tg_cat T PZi|tg_stack T PZi
tg_repeat T TLZ|tg_split i TqiPZ|tg_chunk i TiiPZ|tg_split_sizes i TLZiPZ|tg_gather T TiT|tg_pool T TLZLL
tg_matmul T TT|tg_dot T TT|tg_conv2d T TTTiLLL|tg_max_pool2d T TLLLL|tg_avg_pool2d T TLLLb|tg_one_hot T Tq
tg_contiguous T T|tg_assign i TT|tg_realize i T|tg_realize_many i PZ|tg_to_host i TvZ|tg_item_double i Tv
tg_item_int64 i TL
tg_requires_grad i Tb|tg_get_requires_grad b T|tg_backward i T|tg_backward_with_grad i TT|tg_backward_all i TT|tg_grad T T|tg_zero_grad - T
tg_gradient i TPZP|tg_gradient_with_grad i TTPZP|tg_detach T T
tg_optim_sgd v PZdddbb|tg_optim_lars v PZdddbbd|tg_optim_adam v PZdddd|tg_optim_adamw v PZddddd
tg_optim_lamb v PZddddd|tg_optim_group v PZ|tg_optim_free - v|tg_optim_step i v|tg_optim_step_with i vPZ
tg_optim_zero_grad - v|tg_optim_lr T v|tg_optim_set_lr i vd|tg_optim_get_lr i vv|tg_optim_nparams Z v
tg_set_training b b|tg_is_training b -
tg_scaled_uniform T LZi|tg_glorot_uniform T LZi|tg_kaiming_uniform T LZdi|tg_kaiming_normal T LZdi
tg_linear T TTT|tg_layernorm T TIZd|tg_batchnorm T TTTTTIZ|tg_rms_norm T Td|tg_dropout T Td
tg_conv_transpose2d T TTTiLLLL|tg_scaled_dot_product_attention T TTTTdb
tg_cross_entropy T TTid|tg_sparse_categorical_crossentropy T TTqdi|tg_binary_crossentropy T TTi
tg_binary_crossentropy_logits T TTiT|tg_nll_loss T TTTbqi
"""
# The calls that may run kernels or walk every live handle (and the count of them): GIL released, the queued dead
# handles released first.
_SLOW = {"tg_realize", "tg_realize_many", "tg_to_host", "tg_item_double", "tg_item_int64", "tg_synchronize",
         "tg_backward", "tg_backward_with_grad", "tg_backward_all", "tg_gradient", "tg_gradient_with_grad",
         "tg_optim_step", "tg_optim_step_with", "tg_live_tensors"}

pending: list = []  # handles of dead Tensors, not released yet (Tensor.__del__ appends; release_pending empties)
def release_pending():
  """Releases the queued handles in one C call (the list is swapped first: a __del__ run meanwhile queues anew)."""
  global pending
  batch, pending = pending, []
  if batch:
    arr = array.array("Q", batch)
    _release_many(arr.buffer_info()[0], len(batch))

def _slow(fn):
  def call(*args):
    if pending: release_pending()
    return fn(*args)
  call.__name__ = fn.__name__
  return call

for _entry in _PROTOS.replace("\n", "|").split("|"):
  if not _entry.strip(): continue
  _name, _ret, _args = _entry.split()
  _fn = getattr(_gil_free if _name in _SLOW else lib, _name)
  _fn.restype = _T[_ret]
  _fn.argtypes = [] if _args == "-" else [_T[c] for c in _args]
  if _name in _SLOW: setattr(lib, _name, _slow(_fn))
_release_many = lib.tg_release_many

class _ReleaseNow(list):
  """`pending` after exit: handles of Tensors collected during interpreter shutdown are released at once."""
  def append(self, h): _release_one(h)
_release_one = lib.tg_release
@atexit.register
def _at_exit():
  global pending
  release_pending()
  pending = _ReleaseNow()
