#!/usr/bin/env python3
"""gen_divmod_cases.py — writes tests/divmod_cases.h, the expectation table of the divmod suite (tests/test_divmod.c).

Each case names its leaves ("a=V:0:7" a Variable, "r0=R0:4" RANGE(4) with axis id 0, "g=S:5" SPECIAL(5) named g) and
holds expressions in a small Python subset (+ - * // % < > <= >= &, unary -, parentheses, ints) that the C suite
parses and builds with the same operator semantics. tinygrad itself evaluates them and supplies the ground truth:
  sym     graph_rewrite(e, sym): render, vmin, vmax            (div/mod cases of test/null/test_uop_symbolic.py, and
          150 random div/mod expressions, each also a `given`, `svalid` and `gate` case with random bounds)
  fold    fold_divmod_general(e) simplified with `symbolic` (or None), and as built (its shape picks among candidates)
  given   uop_given_valid(valid, idx)
  svalid  simplify_valid(valid), or None                       (test/null/test_simplify_valid_idx.py)
  gate    graph_rewrite(valid.where(idx, Invalid), sym): the index and its valid

Run from the repository root:  python3 tools/gen_divmod_cases.py [/path/to/tinygrad]   (default /work/tgref)
"""
import itertools, os, sys

TG = sys.argv[1] if len(sys.argv) > 1 else "/work/tgref"
sys.path.insert(0, TG)
from tinygrad.dtype import Invalid  # noqa: E402
from tinygrad.uop.ops import UOp, Ops, graph_rewrite  # noqa: E402
from tinygrad.uop.symbolic import sym, symbolic, uop_given_valid, simplify_valid  # noqa: E402
from tinygrad.uop.divandmod import fold_divmod_general  # noqa: E402

OUT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "divmod_cases.h")

SYM = [  # (leaves, expression)
  ("a=V:2:3", "a//2"), ("a=V:0:7 b=V:0:3", "(a+b)//20"), ("a=V:0:7 b=V:0:3", "(a+b)//2"),
  ("a=V:0:7 b=V:0:3", "(a*4+b*4)//2"), ("a=V:0:7 b=V:0:3", "(a*4+b*4)%2"), ("a=V:0:7 b=V:0:3", "(a*5+b*4)//2"),
  ("a=V:0:7 b=V:0:3", "(a*4+b*4+7)//16"), ("a=V:0:7 b=V:0:7", "(a*6+b*6)//16"), ("a=V:0:7 b=V:0:7", "(16+a*6+b*6)//16"),
  ("a=V:0:7", "(a*30+20)//20"), ("a=V:0:7 b=V:0:3", "(a*5+b*5)//2"), ("a=V:0:7 b=V:0:3", "(a*100+b*50)%100"),
  ("a=V:1:2", "(1+a)%2"), ("a=V:0:3", "(3+3*a)%4"), ("a=V:0:3", "(17+13*a)%18"), ("a=V:0:3", "(2+9*a)%18"),
  ("a=V:0:2", "(6*(a+1))%9"), ("x=V:0:3 y=V:0:3", "(9+9*x+9*y)%10"), ("x=V:0:2 y=V:0:2 z=V:0:2", "(7+9*x+9*y+z)%10"),
  ("x=V:0:2 y=V:0:4", "(10+12*x+y%3)%13"), ("x=V:0:1 y=V:0:1", "(3+2*x+3*y)%4"), ("x=V:0:1 y=V:0:1", "(3+6*x+7*y)%4"),
  ("a=V:0:3", "(3+3*a)//4"), ("a=V:0:2", "(18+17*a+17)//18"), ("x=V:0:3 y=V:0:2", "(9+19*x+18*y)//10"),
  ("a=V:0:1", "(3+a)%4"), ("a=V:4:5", "(3+a)%4"), ("a=V:0:1", "(3+a)//4"), ("a=V:0:7", "(a*4+3)//4"),
  ("a=V:0:7", "(a*4+3)//16"), ("a=V:0:20", "(a*10)%9"), ("a=V:0:5", "(a*10)%9"), ("a=V:0:31", "(a%12)%4"),
  ("a=V:0:31", "((4*a)%12)%4"), ("a=V:0:31", "((5*a)%12)%5"), ("a=V:0:31", "(a%4)%12"),
  ("v1=V:0:128 v3=V:0:7", "((((v1%2)*2)+((v3+-1)%5))+-2)%5"), ("v2=V:0:8 v3=V:0:4", "((((v3+3)%7)+(v2+-2))%7)%7"),
  ("a=V:0:1800", "(a//10)//9"), ("a=V:0:124", "(a//2+1)//2"), ("a=V:0:124", "((-a)//2-1)//2"),
  ("a=V:0:124", "((-a)//2+10)//2"), ("a=V:0:124", "((a-10)//2+10)//2"), ("a=V:0:124", "((a+10)//-2+10)//-4"),
  ("a=V:0:124", "(a//-2)//-3"), ("a=V:0:124", "(a//2)//-3"), ("a=V:0:124", "(a//-2)//3"), ("a=V:0:124", "(a//-2+1)//3"),
  ("a=V:0:124", "(-a)%4"), ("a=V:0:124", "a%-4"), ("a=V:0:5 b=V:0:2", "(b+a*10)%9"), ("a=V:0:6", "a%100"),
  ("a=V:-20:20", "a%10"), ("a=V:-1:20", "a%10"), ("a=V:0:10 b=V:0:10", "(-29+a+b*28)%28"),
  ("a=V:0:100 b=V:0:10", "(-29+a+b*28)%28"), ("x=V:0:100", "(x-50)%3"), ("x=V:0:100", "(x-50)%-3"),
  ("x=V:0:100", "(x+7)%-13"), ("a=V:0:10 b=V:0:10", "(-40+a*2+b*40)//40"), ("a=V:0:10 b=V:0:10", "(-40+a*2+b*40)%40"),
  ("a=V:0:10", "(a*4)//4"),
  ("g0=V:0:10 g1=V:0:10 l0=V:0:1 l1=V:0:1 r5=V:0:2 r6=V:0:2", "(l1+((g1*18)+(r5*18)+(l0*162))+(g0*2)+(r6*2)+-40)//18"),
  ("a=V:0:5", "(a-2)//4"), ("a=V:0:5", "(a-1)//4"), ("a=V:0:5", "(a+3)//4"), ("a=V:0:5", "(a+4)//4"),
  ("a=V:0:5", "(a+5)//4"), ("a=V:0:255", "(-a+256)//2"), ("a=V:0:10", "(a*8)//4"), ("a=V:0:10", "(a*-8+16)//4"),
  ("a=V:0:10", "(a*4)//8"), ("a=V:0:10", "(a*-4+4)//8"), ("a=V:-10:10 b=V:-10:10 d=V:1:10", "(3*a+9*b)//(3*d)"),
  ("a=V:-4:4 b=V:-4:4 d1=V:1:5", "(d1*a*b*d1)//(d1)"), ("a=V:-4:4 b=V:-4:4 d1=V:1:5 d2=V:-5:-1", "(d1*a*d2*b*d1)//(d1*d2)"),
  ("a=V:-4:4 b=V:-4:4 d1=V:1:5", "(d1*a+b*d1)//(d1)"), ("a=V:-4:4 b=V:-4:4 c=V:-4:4 d1=V:1:5", "(d1*a+b*d1+c*d1)//(d1)"),
  ("a=V:-4:4 b=V:-4:4 d1=V:1:5 d2=V:-5:-1", "(3*a*d1+9*b*d1)//(3*d1*d2)"),
  ("a=V:-4:4 b=V:-4:4 d1=V:1:5 d2=V:-5:-1", "(3*a*d1+9*b*d1+3)//(3*d1*d2)"),
  ("a=V:0:10 b=V:0:10 d=V:1:10", "(d*a+b)//d"), ("a=V:0:10 b=V:0:10 d=V:1:10", "(d*a*20+b)//(5*d)"),
  ("a=V:0:10 b=V:0:10 d=V:1:10", "(d*a*20+b*d*5+10)//(5*d)"), ("a=V:0:10", "(a*-4+4)%8"), ("a=V:0:10", "(a*-8+20)%4"),
  ("i0=V:0:127 i2=V:0:3", "(i0*4+i2)//4"), ("a=V:0:2", "(a-12)//8"), ("a=V:0:2", "(-a)//7"), ("a=V:1:1", "(a*-3)%8"),
  ("a=V:10:10", "(-a)%7"), ("i=V:0:9", "(i*-10)//11"), ("r0=V:0:9 r1=V:0:6", "(((r0*-7)+r1)+63)//35"),
  ("a=V:-10:10 b=V:0:3", "(a*4+b)//12"), ("a=V:-1:5", "(a*2+7)//8"), ("i=V:0:16", "(i*4)%8//4"), ("x=V:0:23", "x%6//3"),
  ("x=V:0:23", "x%12//4"), ("x=V:0:23", "x%12//4*4+x%4+x//12*12"), ("i=V:0:100", "(-i+199)//-4+50"),
  ("i=V:0:100", "(-i+201)//-4+50"), ("g=V:0:24", "(g+19)//20"), ("g=V:0:24", "(g+20)//20"), ("g=V:0:24", "(g+21)//20"),
  ("g0=V:0:24 g1=V:0:1 g2=V:0:255 l0=V:0:1 l1=V:0:15 l2=V:0:3",
   "(g2*640+g1*160+(g0//5)*2+l0*320+l1*10+l2*2+1)//20"),
  ("g=V:0:7 l2=V:0:1 l3=V:0:1", "(g*4+l2*2+l3)//10"), ("g=V:0:7 l2=V:0:12 l3=V:0:1", "(g*4+l2*2+l3)//12"),
  ("g=V:0:2 l2=V:0:12 l3=V:0:12", "(g*3+l2*19+l3*38)//(3*19)"), ("d=V:2:5 a=V:0:3 b=V:0:1", "(d*a+b)%d"),
  ("x=V:20:23 y=V:8:10", "x//y"), ("x=V:20:23 y=V:8:10", "x%y"), ("g=V:0:124 l=V:0:7", "(-g*8-l+999)//-4+250"),
  ("g=V:0:124 l=V:0:7", "(-g*8-l+1001)//-4+250"), ("l0=V:0:7 l1=V:0:7", "((-l0-l1+14)//(-32))+4"),
  ("a=V:0:2", "(a*4)//6"), ("a=V:0:2", "(a*4+1)//6"), ("a=V:0:2", "(a*4+2)//6"), ("a=V:0:2", "(a*4+3)//6"),
  ("a=V:0:2", "(a*4)%6"), ("a=V:0:2", "(a*4+1)%6"), ("a=V:0:2", "(a*4+2)%6"), ("a=V:0:2", "(a*4+3)%6"),
  ("a=V:0:1 b=V:0:1", "(a*2+b*3+2)//6"), ("g=V:0:15 l=V:0:3", "(g*4+l)%8"), ("g=V:0:15 l=V:0:1", "(g*2+l)%8"),
  ("a=V:0:10 b=V:0:2", "(a*3+b)%9"), ("a=V:0:7 b=V:0:1", "(a*4+b+2)%8"), ("a=V:0:7 b=V:0:2", "(a*6+b+3)%12"),
  ("a=V:0:7 b=V:0:1", "(a*3+b+1)%6"), ("a=V:0:2 b=V:0:31 c=V:0:1", "(160*a+5*b+4*c)//60"),
  ("a=V:0:2 b=V:0:31 c=V:0:1", "(160*a+5*b+4*c+59)//60"), ("a=V:0:100", "(a%-8)//2"), ("a=V:0:100", "(a%-8)%2"),
  ("b=V:0:100", "(31*b+1)//18"), ("b=V:0:100", "(19*b+3)//7"), ("g=V:0:15 l=V:0:3", "((g*4+l)//8)*8+(g*4+l)%8"),
  ("i=V:0:24", "(i//4<3)"), ("i=V:0:24", "((i-20)//4<-3)"), ("i=V:0:24", "(i//-4<-3)"),
]
FOLD = [  # each rule of fold_divmod_general on its own
  ("a=V:0:7", "(a+8)//4"), ("a=V:0:124", "(a%12)//4"), ("a=V:0:124", "(a%-12)//4"), ("a=V:0:31 b=V:0:9", "(a%12+b)%4"),
  ("a=V:0:3", "(3+3*a)%4"), ("a=V:0:3", "(3+3*a)//4"), ("a=V:0:2", "(a*4+2)//6"), ("a=V:0:2", "(a*4+3)%6"),
  ("g=V:0:15 l=V:0:3", "(g*4+l)%8"), ("g=V:0:15 l=V:0:3", "(g*4+l)//8"), ("a=V:-10:10 b=V:0:3", "(a*4+b)//12"),
  ("a=V:-4:4 b=V:-4:4 d=V:1:5", "(3*a*d+9*b*d)//(3*d)"), ("a=V:-4:4 b=V:-4:4 d=V:1:5", "(3*a*d+9*b*d)%(3*d)"),
  ("a=V:0:10 b=V:0:10 d=V:1:10", "(d*a+b)//d"), ("a=V:0:10 b=V:0:10 d=V:1:10", "(d*a+b)%d"), ("x=V:20:23 y=V:8:10", "x%y"),
  ("a=V:0:2 b=V:0:31 c=V:0:1", "(160*a+5*b+4*c+1)//60"), ("a=V:0:3 b=V:0:5 c=V:0:3", "(a*12+b*10+c*15+7)//60"),
  ("a=V:0:3 b=V:0:5 c=V:0:3", "(a*12+b*10+c*15+7)%60"), ("a=V:0:7 b=V:0:2", "(a*6+b+3)%12"),
  ("a=V:0:9 b=V:0:9 c=V:0:9", "(a*18+b*27+c*4+5)//36"), ("a=V:0:9 b=V:0:9 c=V:0:9", "(a*18+b*27+c*4+5)%36"),
  ("a=V:0:7 b=V:0:7", "(a+b)//3"), ("a=V:-5:5", "a%3"), ("b=V:0:100", "(31*b+1)//18"),
]
GIVEN = [  # (leaves, valid, idx)
  ("r0=V:0:2", "r0<3", "(r0+-1)//3"), ("a=V:0:10", "a<4", "a%4"), ("a=V:0:10", "a>=3", "(a+-3)//7"),
  ("a=V:0:10 b=V:0:10", "(a<4)&(b<2)", "(a*2+b)//8"), ("a=V:0:3 b=V:0:3", "a+b>=1", "(a+b+3)//4"),
  ("r0=R0:4 r1=R1:4 r2=R2:4 r3=R3:4", "(r0+r1>=1)&(r2+r3>=1)", "((r0+r1)+(r2+r3)+28)//30"),
  ("r1=R1:7 r2=R2:2 r0=R0:30", "(r2<1)&(r1<6)", "(((r1+r2+1)//7)*-31)+((((r1+r2+218)//224)+r0)%30)*1568"),
  ("a=V:0:20", "3<a", "(a+-4)%20"), ("a=V:0:20", "a<=5", "(a+2)//8"),
]
SVALID = [  # (leaves, valid)
  ("r0=R0:2", "(r0<1)&(((r0*5+1)%6)<5)"), ("r0=R0:2", "(((r0*5+1)%6)<5)&(r0<1)"),
  ("g=S:56 r0=R0:3", "(g+r0<57)&(g+r0>=1)"), ("a=V:0:10", "(a<5)&(a<3)"), ("a=V:0:10", "(a<3)&(a<5)"),
  ("a=V:0:10 b=V:0:10", "(a<3)&(b<5)&(a+b<4)"),
] + [("g0=S:13 g1=S:13 r0=R0:4", "&".join(p)) for p in itertools.permutations(
  ["((g0+11)%14<11)", "((g1+r0*13+(g0+39)//42)%14<11)", "(g0<3)", "(g1+r0*13<42)"])]
GATE = [  # (leaves, valid, idx): TestValidIdxSimplification's check() cases without the LOAD around them
  ("g0=S:5 l0=S:4", "g0*4+l0>=19", "g0*4+l0-19"),
  ("r0=R0:4 r1=R1:4 r2=R2:4 r3=R3:4", "((r0*3+r1)<8)&((((r0*3+r1)//8+r2*3+r3)%4)<2)", "r0+r1+r2+r3"),
  ("r0=R0:4 r1=R1:4 r2=R2:4 r3=R3:4", "(r0+r1>=1)&(r2+r3>=1)", "((r0+r1)+(r2+r3)+28)//30"),
  ("r0=R0:1024 r1=R1:4 r2=R2:4", "(r0<(r1*4+r2))&(r0>=-1)", "r0"), ("r0=V:0:2", "r0<3", "(r0+-1)//3"),
  ("a=V:0:10", "a<4", "a%4+a//4"),
]

def random_cases(n:int, seed:int=1234):
  """Random div/mod index expressions (deterministic): (leaves, valid, expr) with a random bound as the valid."""
  import random
  rng = random.Random(seed)
  out = []
  for _ in range(n):
    names = ["a", "b", "c"][:rng.randint(1, 3)]
    decl = " ".join(f"{v}=V:{(lo:=rng.randint(-3, 2))}:{lo+rng.randint(1, 12)}" for v in names)
    def gen(d):
      k = rng.randint(0, 6 if d > 0 else 1)
      if k == 0: return rng.choice(names)
      if k == 1: return str(rng.randint(0, 9))
      if k == 2: return f"({gen(d-1)}+{gen(d-1)})"
      if k == 3: return f"({gen(d-1)}*{rng.randint(1, 12)})"
      if k == 4: return f"({gen(d-1)}*{rng.randint(2, 9)}+{gen(d-1)})"
      return f"({gen(d-1)}{'//' if k == 5 else '%'}{rng.choice([2, 3, 4, 5, 6, 8, 9, 12, 16])})"
    e = f"{gen(3)}{rng.choice(['//', '%'])}{rng.choice([2, 3, 4, 6, 8, 10, 12, 16])}"
    def clause():
      x = rng.choice(names + [f"({rng.choice(names)}+{rng.choice(names)})", f"({rng.choice(names)}*{rng.randint(2, 4)})"])
      return f"({x}<{rng.randint(0, 8)})" if rng.random() < 0.5 else f"({x}>={rng.randint(-2, 6)})"
    valid = "&".join(clause() for _ in range(rng.randint(1, 3)))
    out.append((decl, valid, e))
  return out

def leaves(decl:str) -> dict:
  env = {}
  for d in decl.split():
    name, spec = d.split("=")
    kind, *args = spec.split(":")
    if kind == "V": env[name] = UOp.variable(name, int(args[0]), int(args[1]), param=True)
    elif kind == "S": env[name] = UOp.special(int(args[0]), name)
    elif kind.startswith("R"): env[name] = UOp.range(int(args[0]), int(kind[1:]))
    else: raise ValueError(d)
  return env

def rnd(u:UOp|None) -> str: return "None" if u is None else u.render(simplify=False)
def c_str(s:str) -> str: return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

def main():
  rows = []
  for decl, e in SYM:
    v = graph_rewrite(eval(e, leaves(decl)), sym)
    rows.append(("sym", decl, "", e, rnd(v), str(int(v.vmin)), str(int(v.vmax))))
  for decl, valid, e in random_cases(150):
    env = leaves(decl)
    if not isinstance(eval(e, env), UOp): continue  # constants only
    v = graph_rewrite(eval(e, env), sym)
    rows.append(("sym", decl, "", e, rnd(v), str(int(v.vmin)), str(int(v.vmax))))
    rows.append(("given", decl, valid, e, rnd(uop_given_valid(eval(valid, env), eval(e, env))), "", ""))
    if "&" in valid: rows.append(("svalid", decl, valid, "", rnd(simplify_valid(eval(valid, env))), "", ""))
    out = graph_rewrite(eval(valid, env).where(eval(e, env), UOp.const(Invalid)), sym)
    rows.append(("gate", decl, valid, e, rnd(out.get_idx()), rnd(out.get_valid()), ""))
  for decl, e in FOLD:
    f = fold_divmod_general(eval(e, leaves(decl)))
    rows.append(("fold", decl, "", e, rnd(None if f is None else graph_rewrite(f, symbolic)), rnd(f), ""))
  for decl, valid, e in GIVEN:
    env = leaves(decl)
    rows.append(("given", decl, valid, e, rnd(uop_given_valid(eval(valid, env), eval(e, env))), "", ""))
    if "&" in valid: rows.append(("svalid", decl, valid, "", rnd(simplify_valid(eval(valid, env))), "", ""))
    out = graph_rewrite(eval(valid, env).where(eval(e, env), UOp.const(Invalid)), sym)
    rows.append(("gate", decl, valid, e, rnd(out.get_idx()), rnd(out.get_valid()), ""))
  for decl, valid in SVALID:
    rows.append(("svalid", decl, valid, "", rnd(simplify_valid(eval(valid, leaves(decl)))), "", ""))
  for decl, valid, e in GATE:
    env = leaves(decl)
    out = graph_rewrite(eval(valid, env).where(eval(e, env), UOp.const(Invalid)), sym)
    rows.append(("gate", decl, valid, e, rnd(out.get_idx()), rnd(out.get_valid()), ""))
  with open(OUT_FILE, "w") as f:
    f.write("/* divmod_cases.h — GENERATED by tools/gen_divmod_cases.py from tinygrad; do not edit.\n"
            " * DIVMOD_CASE(kind, leaves, valid, expr, expected, expected2, expected3): see the script for the kinds. */\n")
    for r in rows: f.write("DIVMOD_CASE(" + ", ".join(c_str(x) for x in r) + ")\n")
  print(f"wrote {len(rows)} cases to {OUT_FILE}")

if __name__ == "__main__": main()
