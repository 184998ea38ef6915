// tl/host_grid.cuh: the launcher's grid arithmetic, on the host, in 64 bits, with the
// meaning the Python runtime gives it (tlc/runtime/grid.py): `//` floors and `%` takes the
// divisor's sign.  A division by zero, an overflow of 64 bits or a float that is no whole
// number marks the grid bad (`ok` false) instead of being undefined behaviour; the launcher
// then returns cudaErrorInvalidValue, unless only divisions by zero made it bad and another
// extent is 0 (`empty_despite_division`: no block runs, so none reads what divided, as the
// Python runtime's empty_despite_division says).  No includes: the limits are spelled out.
#ifndef __CUDACC_RTC__
namespace tl {

struct HostGrid {
  static constexpr long long MAX = 0x7fffffffffffffffLL, MIN = -MAX - 1;
  bool ok = true;
  // the extent being computed: whether it divided by zero, or went bad otherwise (after a
  // division by zero, which Python stops at, nothing computed with its 0 counts); over the
  // extents done (`extent`): whether one went bad otherwise, whether one computed to 0
  bool now_divided = false, now_bad = false, other = false, empty = false;

  long long bad() { ok = false; now_bad = now_bad || !now_divided; return 0; }
  long long by_zero() { ok = false; now_divided = true; return 0; }
  // one extent computed: its value, its state kept
  long long extent(long long v) {
    other = other || now_bad;
    empty = empty || (v == 0 && !now_bad && !now_divided);
    now_bad = now_divided = false;
    return v;
  }
  bool empty_despite_division() const { return !ok && !other && empty; }
  // Whether a stepped loop over bounds computed on this object counts and ends within i32
  // (runtime/loop_bounds.py's counts_in_i32): a bound that divided by zero is the loop's own
  // error where it runs, as in the Python runtime; one that overflowed 64 bits fits no i32.
  bool loop_counter_fits(long long start, long long stop, long long step) {
    const bool divided = now_divided, bounds_bad = now_bad;
    now_bad = now_divided = false;
    if (divided) return true;
    const long long lo = -2147483647LL - 1, hi = 2147483647LL;
    if (bounds_bad || step == 0 || start < lo || start > hi || stop < lo || stop > hi || step < lo || step > hi)
      return false;
    if (step > 0 ? stop <= start : stop >= start) return true;  // no iteration: it stays at start
    const long long past = start + (stop - start + (step > 0 ? step - 1 : step + 1)) / step * step;
    return past >= lo && past <= hi;  // within 64 bits: the bounds fit i32
  }
  long long add(long long a, long long b) { return (b > 0 ? a > MAX - b : a < MIN - b) ? bad() : a + b; }
  long long sub(long long a, long long b) { return (b < 0 ? a > MAX + b : a < MIN + b) ? bad() : a - b; }
  long long neg(long long a) { return a == MIN ? bad() : -a; }
  long long mul(long long a, long long b) {
    if (a == 0 || b == 0) return 0;
    const bool over = a > 0 ? (b > 0 ? a > MAX / b : b < MIN / a) : (b > 0 ? a < MIN / b : b < MAX / a);
    return over ? bad() : a * b;
  }
  long long floordiv(long long a, long long b) {
    if (b == 0) return by_zero();
    if (a == MIN && b == -1) return bad();
    const long long q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  long long mod(long long a, long long b) {
    if (b == 0) return by_zero();
    if (b == -1) return 0;
    const long long r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  long long pow(long long a, long long b) {
    if (b < 0) return bad();  // a fraction in Python: never a grid extent
    if (a == 0 || a == 1) return b == 0 ? 1 : a;
    if (a == -1) return b % 2 ? -1 : 1;
    long long r = 1;
    for (; b > 0 && !now_bad; --b) r = mul(r, a);  // overflows within 63 steps
    return r;
  }
  long long shl(long long a, long long b) {
    if (b < 0) return bad();
    if (a == 0) return 0;
    if (b >= 63) return a == -1 && b == 63 ? MIN : bad();
    return mul(a, 1LL << b);
  }
  long long shr(long long a, long long b) {
    if (b < 0) return bad();
    return b >= 63 ? (a < 0 ? -1 : 0) : a >> b;
  }
  double div(double a, double b) { return b == 0 ? static_cast<double>(by_zero()) : a / b; }
  // float -> integer truncates toward zero, as C and Python's int() do
  long long trunc(double x) {
    return (x != x || x >= 9223372036854775808.0 || x < -9223372036854775808.0) ? bad() : static_cast<long long>(x);
  }
  // an extent computed in floats: only a whole number is one
  long long whole(double x) {
    if (now_divided) return 0;  // the extent divided by zero: `extent` keeps that
    const long long n = trunc(x);
    return !now_bad && static_cast<double>(n) == x ? n : bad();
  }
  template <typename A, typename B> static auto min(A a, B b) -> decltype(a + b) { return a < b ? a : b; }
  template <typename A, typename B> static auto max(A a, B b) -> decltype(a + b) { return a < b ? b : a; }

  // Whether the GPU launches extents `e`: each from 0 (an empty tensor: nothing to launch) to
  // most[i].  A persistent kernel's extents count tiles, at most `tiles` of them together
  // (0: not persistent); it launches at most one block per SM.
  static bool fits(const long long e[3], const long long most[3], long long tiles) {
    if (tiles > 0 && e[0] > 0 && e[1] > 0 && e[2] > 0) return e[0] <= tiles / e[1] / e[2];
    for (int i = 0; i < 3; ++i)
      if (e[i] < 0 || e[i] > most[i]) return false;
    return true;
  }
};

}  // namespace tl
#endif  // __CUDACC_RTC__
