// The text form (src/ir/text_parse.cc, text_print.cc): what the parser reads, the printer's
// canonical text, round trips, and errors that name what is wrong and where.
#include "solar/ir/text.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph_equal.h"

namespace solar::ir {
namespace {

using testing::graph_diff;

// The docs/ir-text.md example, completed with the tensors it leaves out (x, w, x2, x3).
constexpr const char* kDocExample = R"(# A comment runs to the end of the line.
graph attention_head                         # optional, first statement

q = bf16[2,8,128,64]{dims="B,H,S,D"} input
k = bf16[2,8,128,64] input
w4 = i4[512,512]{sparsity="2:4"} weight
x = f32[2,8,32,32] input
w = f32[16,8,3,3]{zeros=0.25} weight
x2 = f32[2,8,64] input
x3 = f32[2,128] input
s = f32[2,8,128,128] einsum "bhqd,bhkd->bhqk" (q, k)
m = f32[2,8,128,128] einsum [b=2,h=8,q=128,k=128] none mul($0,0.125) (s[b,h,q,k]) -> [b,h,q,k] where q >= k
y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r-1,q*2+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q]
t = bf16[2,128,8,64] move permute {perm=[0,2,1,3]} (q)
v, i = f32[2,8], i64[2,8] opaque "topk" {vector_flops=14336, special_ops=0, bytes=16512, assumption="bitonic: n log2 n compares", k=8} (x2)
f = f32[2,65] unanalyzed "aten::_fft_r2c" {reason="no lowering for FFT"} (x3)
)";

const Op& op_named(const Graph& g, std::string_view name) {
  for (const Op& op : g.ops())
    if (op.name == name) return op;
  throw std::runtime_error("no op " + std::string(name));
}

const Tensor& tensor_named(const Graph& g, std::string_view name) {
  return g.tensor(*g.find_tensor(name));
}

// Expects a parse error whose message contains `substr`, at `line` (0: any line).
void expect_parse_error(std::string_view text, std::string_view substr, int line = 0) {
  try {
    parse_graph(text, "t.txt");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse) << e.what();
    EXPECT_NE(std::string(e.what()).find(substr), std::string::npos)
        << "message: " << e.what() << "\nwanted: " << substr;
    if (line > 0) {
      EXPECT_EQ(e.origin().line, line) << e.what();
    }
    EXPECT_EQ(e.origin().file, "t.txt");
  }
}

// A shorthand einsum whose letters disagree with its operands' shapes is well-formed text on
// the wrong shapes: an invalid graph (exit 5, docs/cli.md), as the verifier says of the full
// form, with the file and line.
TEST(TextParse, ShorthandShapeMismatchIsAnInvalidGraph) {
  struct Case {
    std::string text, message;
    int line;
  };
  for (const Case& c : std::vector<Case>{
           {"a = f32[4,5] input\nb = f32[6,3] input\nc = f32[4,3] einsum \"mk,kn->mn\" (a, b)",
            "letter 'k' has extent 5 in operand 0 ('a') but 6 in operand 1 ('b')", 3},
           {"a = f32[4,5] input\nc = f32[4] einsum \"mkn->m\" (a)",
            "operand 0 ('a') has rank 2 but its subscript \"mkn\" has 3 letters", 2}}) {
    try {
      parse_graph(c.text, "t.txt");
      ADD_FAILURE() << "no error for:\n" << c.text;
    } catch (const UserError& e) {
      EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      EXPECT_EQ(e.origin().file, "t.txt");
      EXPECT_EQ(e.origin().line, c.line);
    }
  }
}

TEST(TextParse, DocExample) {
  Graph g = parse_graph(kDocExample, "doc.txt");
  EXPECT_EQ(g.name, "attention_head");
  EXPECT_EQ(g.source, "doc.txt");
  EXPECT_EQ(g.ops().size(), 6u);
  EXPECT_EQ(tensor_named(g, "q").dim_names, (std::vector<std::string>{"B", "H", "S", "D"}));
  EXPECT_EQ(tensor_named(g, "q").role, Role::Input);
  EXPECT_EQ(tensor_named(g, "w4").dtype, DType::I4);
  ASSERT_TRUE(tensor_named(g, "w4").sparsity);
  EXPECT_TRUE(tensor_named(g, "w4").sparsity->structured_2_4);
  EXPECT_EQ(tensor_named(g, "w4").sparsity->zero_fraction, 0.5);  // 2:4 alone: half zero
  EXPECT_EQ(tensor_named(g, "w").sparsity->zero_fraction, 0.25);
  EXPECT_FALSE(tensor_named(g, "w").sparsity->structured_2_4);
  EXPECT_EQ(tensor_named(g, "y").role, Role::Output);
  EXPECT_EQ(tensor_named(g, "s").role, Role::Intermediate);

  // Shorthand: output letters first (b,h,q,k), then the reduced d; extents from shapes.
  const EinsumOp& s = op_named(g, "s").einsum();
  ASSERT_EQ(s.indices.size(), 5u);
  EXPECT_EQ(s.indices[0], (IndexDim{"b", 2}));
  EXPECT_EQ(s.indices[3], (IndexDim{"k", 128}));
  EXPECT_EQ(s.indices[4], (IndexDim{"d", 64}));
  EXPECT_EQ(s.reduce, Reduce::Sum);
  EXPECT_TRUE(s.combine.is_product_of_two_operands());
  EXPECT_EQ(s.reduced_indices(), std::vector<IndexPos>{4});

  const EinsumOp& m = op_named(g, "m").einsum();
  EXPECT_EQ(m.reduce, Reduce::None);
  ASSERT_EQ(m.mask.size(), 1u);
  // q >= k is q - k >= 0: q is index 2, k is index 3.
  EXPECT_EQ(m.mask[0].expr, AffineExpr::make({{2, 1}, {3, -1}}, 0));
  EXPECT_EQ(m.combine, Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::constant(0.125)}));

  const EinsumOp& y = op_named(g, "y").einsum();
  ASSERT_EQ(y.operands.size(), 2u);
  EXPECT_EQ(y.operands[0].pad, 0.0);
  EXPECT_FALSE(y.operands[1].pad);
  // p*2+r-1 with p = index 2, r = index 5.
  EXPECT_EQ(y.operands[0].subscript[2], AffineExpr::make({{2, 2}, {5, 1}}, -1));

  const Op& t = op_named(g, "t");
  EXPECT_EQ(t.move().kind, MoveKind::Permute);
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(t.move().attrs.at("perm")),
            (std::vector<std::int64_t>{0, 2, 1, 3}));

  const Op& v = op_named(g, "v");
  EXPECT_EQ(v.outputs.size(), 2u);
  EXPECT_EQ(v.opaque().function, "topk");
  EXPECT_EQ(v.opaque().vector_flops, Count(14336));
  EXPECT_EQ(v.opaque().bytes, Count(16512));
  EXPECT_EQ(v.opaque().assumption, "bitonic: n log2 n compares");
  EXPECT_EQ(std::get<std::int64_t>(v.opaque().attrs.at("k")), 8);
  EXPECT_EQ(v.opaque().attrs.size(), 1u);  // the cost fields are not attributes

  const Op& f = op_named(g, "f");
  EXPECT_EQ(f.unanalyzed().framework_op, "aten::_fft_r2c");
  EXPECT_EQ(f.unanalyzed().reason, "no lowering for FFT");
  // Origin: this file, the statement's line, the op's own name.
  EXPECT_EQ(f.origin.file, "doc.txt");
  EXPECT_EQ(f.origin.line, 16);
  EXPECT_EQ(f.origin.op, "f");
}

TEST(TextParse, RoundTripIsExact) {
  Graph g = parse_graph(kDocExample, "doc.txt");
  std::string printed = print_graph(g);
  Graph g2 = parse_graph(printed, "printed.txt");
  EXPECT_EQ(graph_diff(g, g2), "") << printed;
  EXPECT_EQ(print_graph(g2), printed);
}

TEST(TextParse, PrinterWritesFullEinsumAndCanonicalMask) {
  Graph g = parse_graph(R"(
a = f32[4,3] input
b = f32[3,5] input
c = f32[4,5]{output} einsum "mk,kn->mn" (a, b)
d = f32[4,4] einsum [i,j=4] none $0 (a[i,0]) -> [i,j] where j <= i, i - 1 >= 0 - j
)");
  std::string p = print_graph(g);
  EXPECT_NE(p.find("c = f32[4,5]{output} einsum [m=4,n=5,k=3] sum mul($0,$1) (a[m,k], b[k,n]) "
                   "-> [m,n]"),
            std::string::npos)
      << p;
  // j <= i is i - j >= 0; i - 1 >= 0 - j is i + j - 1 >= 0.
  EXPECT_NE(p.find("d = f32[4,4] einsum [i=4,j=4] none $0 (a[i,0]) -> [i,j] where i-j >= 0, "
                   "i+j-1 >= 0"),
            std::string::npos)
      << p;
}

// The printer's exact text for every construct it writes (sources with every annotation,
// module classes, each op kind and trailing clause, a repeat body, quoted names): a fixed point
// of parsing and printing. Saved traces, goldens and the fuzz targets depend on this text
// staying the same byte for byte.
TEST(TextPrint, CanonicalTextOfEveryConstruct) {
  const std::string canonical = R"(graph "every construct" {frontend="torch"}
module "" "Net"
module "blk.0" "Block"
q = bf16[2,4,8]{dims="B,S,D"} input
w4 = i4[8,8]{sparsity="2:4"} weight
w = f32[8,8]{zeros=0.25} weight
w24 = f32[8,8]{sparsity="2:4", zeros=0.75} weight
c = i64[] constant
s = f32[2,4,4] einsum [b=2,s=4,t=4,d=8] sum mul($0,$1) (q[b,s,d], q[b,t,d]) -> [b,s,t] hint "attention" module "blk.0"
m = f32[2,4,4] einsum [b=2,s=4,t=4] none mul($0,0.125) (s[b,s,t]) -> [b,s,t] where s-t >= 0
y = f32[2,4,8]{output} einsum [b=2,s=4,e=8,d=8] sum mul($0,$1) (q[b,s+d-1,d] pad 0, w[d,e]) -> [b,s,e]
t = bf16[4,2,8] move permute {note="a \"q\"", perm=[1,0,2], value=1.0} (q) from "aten::permute" at "model.py:42"
v, i = f32[2,4], i64[2,4] opaque "topk" {vector_flops=64, special_ops=0, bytes="100000000000000000000000", assumption="n log n", k=2} (s) name "topk_1"
f = f32[2,5] unanalyzed "aten::_fft_r2c" {reason="no FFT"} (q) at "model.py"
h, hs = f32[2,4], f32[4,2,4] repeat 4 reverse (carried v as h0 next h1, sliced s axis 1 as st, invariant c as cc) -> (last h1, stacked h1 axis 0) {
  h0 = f32[2,4] input
  st = f32[2,4] input
  cc = i64[] input
  h1 = f32[2,4]{output} einsum [b=2,k=4] none add($0,$1) (h0[b,k], st[b,k]) -> [b,k]
}
"x:0" = f32[4] input
"out 0" = f32[4]{output} einsum [i=4] none select(gt($0,-inf),$0,nan) ("x:0"[i-1] pad -inf) -> [i]
)";
  EXPECT_EQ(print_graph(parse_graph(canonical, "in.txt")), canonical);
}

// Input written loosely prints in the canonical form: a shorthand einsum as the full form,
// extents filled in, a mask as `expr >= 0`, attributes in name order.
TEST(TextPrint, LooseInputPrintsCanonically) {
  Graph g = parse_graph(R"(
q = bf16[2,4,8] input
s = f32[2,4,4] einsum "bsd,btd->bst" (q, q)
m = f32[2,4,4] einsum [b,s,t] none $0 (s[b,s,t]) -> [b,s,t] where t <= s
t = bf16[4,2,8] move permute {perm=[1,0,2], note="n", value=1.0} (q)
)");
  EXPECT_EQ(print_graph(g), R"(graph graph
q = bf16[2,4,8] input
s = f32[2,4,4] einsum [b=2,s=4,t=4,d=8] sum mul($0,$1) (q[b,s,d], q[b,t,d]) -> [b,s,t]
m = f32[2,4,4] einsum [b=2,s=4,t=4] none $0 (s[b,s,t]) -> [b,s,t] where s-t >= 0
t = bf16[4,2,8] move permute {note="n", perm=[1,0,2], value=1.0} (q)
)");
}

TEST(TextParse, ShorthandSingleOperandAndImplicitOutput) {
  Graph g = parse_graph(R"(
a = f32[4,3] input
b = f32[3,5] input
t = f32[3,4] einsum "ij->ji" (a)
r = f32[4] einsum "ij->i" (a)
c = f32[4,5] einsum "ij,jk" (a, b)
)");
  const EinsumOp& t = op_named(g, "t").einsum();
  EXPECT_EQ(t.reduce, Reduce::None);
  EXPECT_EQ(t.combine, Expr::operand(0));
  const EinsumOp& r = op_named(g, "r").einsum();
  EXPECT_EQ(r.reduce, Reduce::Sum);
  const EinsumOp& c = op_named(g, "c").einsum();
  // numpy implicit output: letters used once, alphabetically: "ik".
  ASSERT_EQ(c.output.size(), 2u);
  EXPECT_EQ(c.indices[0].name, "i");
  EXPECT_EQ(c.indices[1].name, "k");
  EXPECT_EQ(c.indices[2], (IndexDim{"j", 3}));
}

TEST(TextParse, ExtentInferredFromOutputDimension) {
  // j only appears plainly in the output: its extent comes from the output's shape.
  Graph g = parse_graph(R"(
a = f32[4] input
b = f32[4,7] einsum [i,j] none $0 (a[i]) -> [i,j]
)");
  EXPECT_EQ(g.ops()[0].einsum().indices[1], (IndexDim{"j", 7}));
}

TEST(TextParse, OriginClausesAndOpName) {
  Graph g = parse_graph(R"(graph "my model" {frontend="torch"}
x = f32[4] input
y = f32[4] einsum [i] none relu($0) (x[i]) -> [i] from "aten::relu" at "model.py:42" name "relu_1"
z = f32[4] einsum [i] none neg($0) (y[i]) -> [i] at "model.py"
)");
  EXPECT_EQ(g.name, "my model");
  EXPECT_EQ(g.frontend, "torch");
  const Op& y = g.ops()[0];
  EXPECT_EQ(y.name, "relu_1");
  EXPECT_EQ(y.origin.op, "aten::relu");
  EXPECT_EQ(y.origin.file, "model.py");
  EXPECT_EQ(y.origin.line, 42);
  EXPECT_EQ(g.ops()[1].origin.file, "model.py");
  EXPECT_EQ(g.ops()[1].origin.line, 0);
  EXPECT_EQ(g.ops()[1].origin.op, "z");
  // Explicit origins survive printing.
  Graph g2 = parse_graph(print_graph(g), "other.txt");
  EXPECT_EQ(graph_diff(g, g2, /*compare_origins=*/true), "") << print_graph(g);
}

TEST(TextParse, ContractionHintRoundTrips) {
  Graph g = parse_graph(R"(
q = f32[4,8] input
k = f32[4,8] input
s = f32[4,4] einsum "ld,md->lm" (q, k) hint "attention" from "aten::_scaled_dot_product_flash_attention.default"
t = f32[4,4] einsum "ld,md->lm" (q, k)
)");
  EXPECT_EQ(g.ops()[0].einsum().hint, ContractionHint::Attention);
  EXPECT_EQ(g.ops()[1].einsum().hint, ContractionHint::None);
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("hint \"attention\""), std::string::npos) << text;
  EXPECT_EQ(graph_diff(g, parse_graph(text)), "");
}

TEST(TextParse, HintErrors) {
  EXPECT_THROW(parse_graph("x = f32[4] input\ny = f32[4] move copy (x) hint \"attention\""),
               UserError);
  try {
    parse_graph("x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i]) -> [i] hint \"fast\"");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown hint \"fast\""), std::string::npos) << e.what();
  }
}

TEST(TextParse, NumbersRoundTrip) {
  Graph g = parse_graph(R"(
x = f32[4] input
y = f32[4] einsum [i] none select(gt($0,-inf),add($0,1e-05),mul($0,0.1)) (x[i+1] pad nan) -> [i]
z = f32[4] einsum [i] none max($0,inf) (y[i-2] pad -inf) -> [i]
p = f32[6] move pad {pads=[1,1], value=1.0, note="a \"quoted\"\tstring"} (x)
)");
  const EinsumOp& y = g.ops()[0].einsum();
  EXPECT_TRUE(std::isnan(*y.operands[0].pad));
  EXPECT_EQ(y.combine.children()[1].children()[1].value(), 1e-05);
  EXPECT_EQ(*g.ops()[1].einsum().operands[0].pad, -INFINITY);
  // 1.0 is a float attribute and stays one through printing.
  EXPECT_TRUE(std::holds_alternative<double>(g.ops()[2].move().attrs.at("value")));
  std::string p = print_graph(g);
  EXPECT_NE(p.find("value=1.0"), std::string::npos) << p;
  Graph g2 = parse_graph(p);
  EXPECT_EQ(graph_diff(g, g2), "") << p;
  EXPECT_EQ(std::get<std::string>(g2.ops()[2].move().attrs.at("note")), "a \"quoted\"\tstring");
}

TEST(TextParse, CountsOver64BitsAreQuoted) {
  Graph g = parse_graph(R"(
x = f32[4] input
y = f32[4] opaque "big" {vector_flops="100000000000000000000000", special_ops=0, bytes=18446744073709551615, assumption="test"} (x)
)");
  // 10^23 does not fit in 64 bits.
  Count expect = Count(100000000000ull) * Count(1000000000000ull);
  EXPECT_EQ(g.ops()[0].opaque().vector_flops, expect);
  EXPECT_EQ(g.ops()[0].opaque().bytes, Count(UINT64_MAX));
  std::string p = print_graph(g);
  EXPECT_NE(p.find("vector_flops=\"100000000000000000000000\""), std::string::npos) << p;
  EXPECT_EQ(graph_diff(g, parse_graph(p)), "");
}

TEST(TextParse, QuotedNamesRoundTrip) {
  Graph g = parse_graph(R"(
"layer 1/w" = f32[4]{dims="C"} weight
"out:0" = f32[4]{output} einsum [i] none $0 ("layer 1/w"[i]) -> [i]
)");
  EXPECT_TRUE(g.find_tensor("layer 1/w"));
  EXPECT_EQ(g.ops()[0].name, "out:0");
  std::string p = print_graph(g);
  EXPECT_EQ(graph_diff(g, parse_graph(p)), "") << p;
}

TEST(TextParse, ScalarsAndMultiOutputOpaque) {
  Graph g = parse_graph(R"(
x = f32[8] input
s = f32[]{output} einsum [i] sum $0 (x[i]) -> []
v, i = f32[2], i64[2]{output} opaque "topk" {vector_flops=24, special_ops=0, bytes=48, assumption="8 compares per output"} (x)
)");
  EXPECT_TRUE(tensor_named(g, "s").shape.empty());
  EXPECT_EQ(tensor_named(g, "i").role, Role::Output);
  EXPECT_EQ(tensor_named(g, "v").role, Role::Intermediate);
  EXPECT_EQ(graph_diff(g, parse_graph(print_graph(g))), "");
}

TEST(TextParse, NonCanonicalTensorOrderStillPrintsValidText) {
  // Built by hand: the weight is declared after the op's output, as a JSON file may do.
  Graph g;
  TensorId y = g.add_tensor(Tensor{{}, "y", {4}, DType::F32, Role::Output, {}, {}});
  TensorId a = g.add_tensor(Tensor{{}, "a", {4}, DType::F32, Role::Input, {}, {}});
  Op op;
  op.inputs = {a};
  op.outputs = {y};
  EinsumOp e;
  e.indices = {{"i", 4}};
  e.operands = {Operand{{AffineExpr::index(0)}, std::nullopt}};
  e.output = {AffineExpr::index(0)};
  e.combine = Expr::operand(0);
  op.body = e;
  g.add_op(op);
  Graph g2 = parse_graph(print_graph(g));
  ASSERT_EQ(g2.tensors().size(), 2u);
  EXPECT_EQ(g2.tensors()[0].name, "a");  // renumbered: sources first
  EXPECT_EQ(g2.ops()[0].einsum(), e);
}

struct BadText {
  const char* text;
  const char* message;
  int line;
};

class TextErrors : public ::testing::TestWithParam<BadText> {};

TEST_P(TextErrors, ReportsWhatAndWhere) {
  expect_parse_error(GetParam().text, GetParam().message, GetParam().line);
}

INSTANTIATE_TEST_SUITE_P(
    Table, TextErrors,
    ::testing::Values(
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i,]) -> [i]",
                "expected an affine term (INT, INDEX, INT*INDEX or INDEX*INT) in subscript 1 "
                "of operand 'x', found ']'",
                2},
        BadText{"x = f32[4,4] input\ny = f32[4] einsum [i] none $0 (x[i,i,) -> [i]",
                "expected an affine term", 2},
        BadText{"x = f32[4,4] input\ny = f32[4] einsum [i,j] sum $0 (x[i j]) -> [i]",
                "expected ']' after subscript of operand 'x', found 'j'", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i,j] none $0 (x[i]) -> [i]",
                "index 'j' of 'y' has no extent", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[k]) -> [i]",
                "unknown index 'k' in subscript 0 of operand 'x'", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i,i] none $0 (x[i]) -> [i]",
                "index 'i' is declared twice", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (z[i]) -> [i]",
                "unknown tensor 'z'", 2},
        BadText{"x = f32[4] input\nx = f32[4] input", "tensor 'x' is already defined", 2},
        BadText{"x = f33[4] input", "unknown dtype 'f33'", 1},
        BadText{"x = f32[4] output", "only input, weight and constant tensors stand alone", 1},
        BadText{"x = f32[4]{output} input", "{output} marks an op's result", 1},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none frob($0) (x[i]) -> [i]",
                "unknown combine function 'frob'", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none add($0) (x[i]) -> [i]",
                "'add' takes 2 arguments, got 1", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] average $0 (x[i]) -> [i]",
                "expected a reduction (none sum max min prod any all)", 2},
        BadText{"a = f32[4,5] input\nc = f32[4] einsum \"mk->z\" (a)",
                "output letter 'z' appears in no operand", 2},
        BadText{"a = f32[4] input\nc = f32[4] einsum \"i,i,i->i\" (a, a, a)",
                "the shorthand takes 1 or 2 operands", 2},
        BadText{"a = f32[4] input\nc = f32[4] einsum \"i...->i\" (a)", "is not an index letter",
                2},
        BadText{"x = f32[4] input\ny = f32[4] opaque \"sort\" {vector_flops=1, bytes=2, "
                "assumption=\"a\"} (x)",
                "needs special_ops=N", 2},
        BadText{"x = f32[4] input\ny = f32[4] opaque \"sort\" {vector_flops=1, special_ops=0, "
                "bytes=2} (x)",
                "needs assumption=", 2},
        BadText{"x = f32[4] input\ny = f32[4] opaque \"sort\" {vector_flops=-1, special_ops=0, "
                "bytes=2, assumption=\"a\"} (x)",
                "expected a count", 2},
        BadText{"x = f32[4] input\ny = f32[4] move permute {perm=[0} (x)",
                "expected ']' closing the list", 2},
        BadText{"x = f32[4] input\ny = f32[4] move twist (x)", "expected a move kind", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i]) -> [i] extra",
                "expected end of line after the op producing 'y', found 'extra'", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i]) -> [i] from \"a\" from "
                "\"b\"",
                "'from' is given twice", 2},
        BadText{"x = f32[4] input\n\n  y = \"unterminated", "unterminated string", 3},
        BadText{"x = f32[4] input ;", "unexpected character ';'", 1},
        BadText{"x = f32[99999999999999999999] input", "out of range", 1},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i*99999999999999999999]) "
                "-> [i]",
                "does not fit in 64 bits", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i*9223372036854775807+"
                "i*9223372036854775807]) -> [i]",
                "overflows 64-bit integers", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i]) -> [i] where i",
                "expected '>=' or '<=' in the mask of 'y'", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i] pad) -> [i]",
                "expected a number as the pad value of 'x'", 2},
        BadText{"x = f32[4] input\ny, z = f32[4] opaque \"f\" {} (x)",
                "expected ',' before the type of 'z'", 2},
        BadText{"x = f32[4] input\ngraph g", "'graph NAME' must be the first statement", 2},
        BadText{"x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i]) -> [i] at \"f\" \"g\"",
                "expected end of line", 2},
        BadText{"x = f32[4] input\ny = f32[4] unanalyzed \"a\xff\" (x)", "invalid UTF-8", 2},
        BadText{"x = f32[4] input\ny = f32[4] unanalyzed \"a\\x80\" (x)",
                "\\x takes two hex digits, 00 to 7f", 2},
        BadText{"x = f32[4] input\ny = f32[4] unanalyzed \"a\\q\" (x)", "bad escape '\\q'", 2},
        BadText{"x = f32[4] input\ny, y = f32[4], f32[4] opaque \"f\" {} (x)",
                "tensor 'y' is named twice in one statement", 2},
        BadText{"x = f32[4] input\ny = f32[4] unanalyzed \"f\" {why=\"no\"} (x)",
                "takes only reason=", 2},
        BadText{"x = f32[4] input\ny = f32[4] move copy {a=1, a=2} (x)",
                "attribute 'a' is given twice", 2}));

TEST(TextParse, DeepCombineNestingIsAClearError) {
  std::string combine = "$0";
  for (int i = 0; i < 300; ++i) combine = "neg(" + combine + ")";
  expect_parse_error("x = f32[4] input\ny = f32[4] einsum [i] none " + combine +
                         " (x[i]) -> [i]",
                     "nests deeper than 256 levels", 2);
  // 200 levels are fine.
  combine = "$0";
  for (int i = 0; i < 200; ++i) combine = "neg(" + combine + ")";
  Graph g = parse_graph("x = f32[4] input\ny = f32[4] einsum [i] none " + combine +
                        " (x[i]) -> [i]");
  EXPECT_EQ(graph_diff(g, parse_graph(print_graph(g))), "");
}

TEST(TextParse, InvalidGraphIsAVerifierError) {
  try {
    parse_graph("x = f32[4] input\ny = f32[5] einsum [i] none $0 (x[i]) -> [i]", "v.txt");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(e.what()).find("index 'i' has extent 4 but output 'y' dimension 0 has "
                                         "size 5"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.origin().file, "v.txt");
    EXPECT_EQ(e.origin().line, 2);
  }
}

TEST(TextParse, LargeGraphParses) {
  // A 20,000-op chain: a layer of matmul + bias + relu, repeated (no timing assertion; this
  // guards against quadratic behaviour that would make it crawl).
  constexpr int kLayers = 20000 / 3;
  std::string text = "graph big\nx0 = f32[8,16] input\n";
  for (int l = 0; l < kLayers; ++l) {
    text += fmt::format("w{0} = bf16[16,16] weight\nb{0} = f32[16] weight\n", l);
    text += fmt::format("m{0} = f32[8,16] einsum \"mk,kn->mn\" (x{0}, w{0})\n", l);
    text += fmt::format(
        "a{0} = f32[8,16] einsum [m=8,n=16] none add($0,$1) (m{0}[m,n], b{0}[n]) -> [m,n]\n", l);
    text += fmt::format("x{1} = f32[8,16]{2} einsum [m,n] none relu($0) (a{0}[m,n]) -> [m,n]\n",
                        l, l + 1, l + 1 == kLayers ? "{output}" : "");
  }
  Graph g = parse_graph(text, "big.txt");
  EXPECT_EQ(g.ops().size(), 3u * kLayers);
  EXPECT_EQ(g.tensors().size(), 1u + 5u * kLayers);  // x0, then w, b, m, a, x per layer
  std::string printed = print_graph(g);
  EXPECT_EQ(graph_diff(g, parse_graph(printed)), "");
}

}  // namespace
}  // namespace solar::ir
