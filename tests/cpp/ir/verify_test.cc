#include "solar/ir/verify.h"

#include <gtest/gtest.h>

#include <functional>

#include "solar/ir/text.h"

namespace solar::ir {
namespace {

// ---- graphs that parse but do not verify: parse_graph reports the verifier's sentence ----

struct BadGraph {
  const char* name;
  const char* text;
  const char* message;  // a substring of the verifier's sentence
};

void PrintTo(const BadGraph& b, std::ostream* os) { *os << b.name; }

class VerifyText : public ::testing::TestWithParam<BadGraph> {};

TEST_P(VerifyText, RejectsWithPreciseMessage) {
  try {
    parse_graph(GetParam().text, "bad.txt");
    FAIL() << "verified:\n" << GetParam().text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph) << e.what();
    EXPECT_NE(e.message().find(GetParam().message), std::string::npos)
        << "message: " << e.message() << "\nwanted:  " << GetParam().message;
    EXPECT_EQ(e.origin().file, "bad.txt");
  }
}

constexpr const char* kConv = R"(
x = f32[2,8,32,32] input
w = f32[16,8,3,3] weight
)";

INSTANTIATE_TEST_SUITE_P(
    Table, VerifyText,
    ::testing::Values(
        // tensors
        BadGraph{"zero_fraction_range", "w = f32[4]{zeros=1.5} weight",
                 "tensor 'w' has zero fraction 1.5, outside [0, 1]"},
        BadGraph{"two_four_below_half", "w = f32[4]{sparsity=\"2:4\", zeros=0.3} weight",
                 "tensor 'w' is 2:4 sparse but its zero fraction 0.3 is below 0.5"},
        BadGraph{"dim_names_count", "q = f32[4]{dims=\"A,B\"} input",
                 "tensor 'q' has 2 dimension names for rank 1"},
        BadGraph{"too_many_elements",
                 "x = f32[4294967296,4294967296,4294967296,4294967296] input",
                 "more than 2^122 elements"},
        // einsum structure
        BadGraph{"operand_rank",
                 "x = f32[4,4,4] input\nw = f32[4,4,4] weight\n"
                 "y = f32[4] einsum [i,j,k,l=4] sum mul($0,$1) (x[i,j,k], w[i,j,k,l]) -> [i]",
                 "op 'y': operand 1 ('w') has rank 3 but its subscript has 4 expressions"},
        BadGraph{"two_outputs",
                 "x = f32[4] input\na, b = f32[4], f32[4] einsum [i] none $0 (x[i]) -> [i]",
                 "op 'a': an einsum has exactly one output, found 2"},
        BadGraph{"negative_extent",
                 "x = f32[4] input\ny = f32[4] einsum [i=4,j=-1] sum $0 (x[i+j]) -> [i]",
                 "op 'y': index 'j' has extent -1; extents must be >= 0"},
        BadGraph{"plain_extent_mismatch",
                 "a = f32[4,5] input\nb = f32[1,6] input\n"
                 "c = f32[4,6] einsum [m,n,k] sum mul($0,$1) (a[m,k], b[k,n]) -> [m,n]",
                 "op 'c': index 'k' has extent 5 but operand 1 ('b') dimension 0 has size 1 (no "
                 "implicit broadcast"},
        BadGraph{"affine_out_of_range",
                 "x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i+1]) -> [i]",
                 "op 'y': operand 0 ('x') subscript 0 'i+1' ranges over [1, 4], outside [0, 4)"},
        BadGraph{"conv_without_pad",
                 "x = f32[2,8,32,32] input\nw = f32[16,8,3,3] weight\n"
                 "y = f32[2,16,16,16] einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) "
                 "(x[n,c,p*2+r-1,q*2+s-1], w[k,c,r,s]) -> [n,k,p,q]",
                 "operand 0 ('x') subscript 2 'p*2+r-1' ranges over [-1, 31], outside [0, 32)"},
        BadGraph{"output_rank",
                 "x = f32[4,4] input\ny = f32[4] einsum [i,j] none $0 (x[i,j]) -> [i,j]",
                 "op 'y': output 'y' has rank 1 but the output subscript has 2 expressions"},
        BadGraph{"output_extent",
                 "x = f32[4] input\ny = f32[5] einsum [i] none $0 (x[i]) -> [i]",
                 "index 'i' has extent 4 but output 'y' dimension 0 has size 5"},
        BadGraph{"output_affine_range",
                 "x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i]) -> [i*2]",
                 "output 'y' subscript 0 'i*2' ranges over [0, 6], outside [0, 4)"},
        BadGraph{"combine_operand_range",
                 "x = f32[4] input\ny = f32[4] einsum [i] none add($0,$2) (x[i]) -> [i]",
                 "op 'y': combine refers to $2 but the op has 1 operand"},
        BadGraph{"operand_unused",
                 "a = f32[4] input\nb = f32[4] input\n"
                 "y = f32[4] einsum [i] none exp($0) (a[i], b[i]) -> [i]",
                 "op 'y': operand 1 ('b') is not used by the combine expression exp($0)"},
        BadGraph{"reduce_none_with_reduced",
                 "x = f32[4,3] input\ny = f32[4] einsum [i,j] none $0 (x[i,j]) -> [i]",
                 "op 'y': reduce is none but index 'j' does not appear in the output"},
        BadGraph{"unused_index",
                 "x = f32[4] input\ny = f32[4] einsum [i,j=3] sum $0 (x[i]) -> [i]",
                 "op 'y': index 'j' appears in no operand or output subscript"},
        // data movement
        BadGraph{"permute_missing", "q = f32[2,3] input\nt = f32[3,2] move permute (q)",
                 "op 't': permute needs attribute perm=[...] (2 integers)"},
        BadGraph{"permute_not_perm",
                 "q = f32[2,3] input\nt = f32[3,2] move permute {perm=[1,1]} (q)",
                 "permute perm=[1,1] is not a permutation of 0..1"},
        BadGraph{"permute_shape",
                 "q = f32[2,3,4] input\nt = f32[3,2,4] move permute {perm=[0,2,1]} (q)",
                 "dimension 0 has size 3 but input dimension perm[0]=0 has size 2"},
        BadGraph{"permute_dtype",
                 "q = f32[2,3] input\nt = bf16[3,2] move permute {perm=[1,0]} (q)",
                 "permute changes the dtype from f32 ('q') to bf16 ('t'); use a cast"},
        BadGraph{"view_count", "x = f32[2,3] input\nv = f32[7] move view (x)",
                 "view output 'v' [7] has 7 elements but input 'x' [2,3] has 6"},
        BadGraph{"view_bits", "x = f32[2,3] input\nv = f16[6] move view (x)",
                 "changes the size in bits"},
        BadGraph{"copy_count", "x = f32[2,3] input\nv = f32[5,3] move copy (x)",
                 "copy output 'v' [5,3] has 15 elements but input 'x' [2,3] has 6"},
        BadGraph{"slice_size",
                 "x = f32[10] input\ns = f32[5] move slice {starts=[2], ends=[10], steps=[2]} (x)",
                 "dimension 0 has size 5 but [2:10:2] selects 4"},  // (10 - 2) / 2
        BadGraph{"slice_bounds",
                 "x = f32[10] input\ns = f32[4] move slice {starts=[8], ends=[12]} (x)",
                 "slice dimension 0: need 0 <= start (8) <= end (12) <= size (10)"},
        BadGraph{"slice_step",
                 "x = f32[10] input\ns = f32[0] move slice {starts=[0], ends=[0], steps=[0]} (x)",
                 "slice step 0 in dimension 0 must be >= 1"},
        BadGraph{"concat_axis", "a = f32[2] input\nc = f32[4] move concat (a, a)",
                 "op 'c': concat needs an integer attribute axis=N"},
        BadGraph{"concat_shape",
                 "a = f32[2,3] input\nb = f32[2,4] input\nc = f32[4,3] move concat {axis=0} (a, b)",
                 "concat input 1 ('b') [2,4] differs from output 'c' [4,3] in dimension 1"},
        BadGraph{"concat_sum",
                 "a = f32[2,3] input\nb = f32[2,3] input\nc = f32[5,3] move concat {axis=0} (a, b)",
                 "axis 0 has size 5 but the inputs sum to 4"},
        BadGraph{"pad_length", "x = f32[4,4] input\np = f32[6,6] move pad {pads=[1,1]} (x)",
                 "pad attribute 'pads' has 2 entries but needs 4"},
        BadGraph{"pad_size", "x = f32[4] input\np = f32[7] move pad {pads=[1,1]} (x)",
                 "dimension 0 has size 7 but 4 + 1 (before) + 1 (after) = 6"},
        BadGraph{"gather_float_index",
                 "d = f32[10,4] input\ni = f32[3] input\ng = f32[3,4] move gather {axis=0} (d, i)",
                 "gather index 'i' has dtype f32; it must be an integer type"},
        BadGraph{"gather_inputs", "d = f32[10,4] input\ng = f32[3,4] move gather {axis=0} (d)",
                 "gather takes 2 inputs (data, index), found 1"},
        BadGraph{"gather_axis",
                 "d = f32[10,4] input\ni = i64[3] input\ng = f32[3,4] move gather {axis=2} (d, i)",
                 "gather axis 2 is outside [0, 2)"},
        BadGraph{"gather_take_shape",
                 "d = f32[10,4] input\ni = i64[2,3] input\ng = f32[6,4] move gather {axis=0} (d, i)",
                 "gather (take) output 'g' [6,4] must have shape data[:axis] + index + "
                 "data[axis+1:] = [2,3,4]"},
        BadGraph{"gather_mode",
                 "d = f32[10,4] input\ni = i64[3] input\n"
                 "g = f32[3,4] move gather {axis=0, mode=\"rows\"} (d, i)",
                 "gather attribute 'mode' must be \"take\" or \"elements\""},
        BadGraph{"gather_elements_rank",
                 "d = f32[10,4] input\ni = i64[3] input\n"
                 "g = f32[3] move gather {axis=0, mode=\"elements\"} (d, i)",
                 "gather (elements) index 'i' [3] must have the rank of its data 'd' [10,4]"},
        BadGraph{"gather_elements_fit",
                 "d = f32[10,4] input\ni = i64[12,5] input\n"
                 "g = f32[12,5] move gather {axis=0, mode=\"elements\"} (d, i)",
                 "index 'i' [12,5] is larger than its data 'd' [10,4] in dimension 1 (only axis 0 "
                 "may differ)"},
        BadGraph{"gather_elements_shape",
                 "d = f32[10,4] input\ni = i64[12,4] input\n"
                 "g = f32[12,3] move gather {axis=0, mode=\"elements\"} (d, i)",
                 "gather (elements) output 'g' [12,3] must have the shape of its index 'i' [12,4]"},
        BadGraph{"scatter_elements_rank",
                 "d = f32[10,4] input\ni = i64[3] input\ns = f32[3,4] input\n"
                 "o = f32[10,4] move scatter {axis=0} (d, i, s)",
                 "scatter (elements) index 'i' [3] must have the rank of its data 'd' [10,4]"},
        BadGraph{"scatter_elements_src",
                 "d = f32[10,4] input\ni = i64[3,4] input\ns = f32[2,4] input\n"
                 "o = f32[10,4] move scatter {axis=0} (d, i, s)",
                 "scatter (elements) index 'i' [3,4] is larger than its source 's' [2,4] in "
                 "dimension 0"},
        BadGraph{"scatter_take_src",
                 "d = f32[10,4] input\ni = i64[3] input\ns = f32[4,4] input\n"
                 "o = f32[10,4] move scatter {axis=0, mode=\"take\"} (d, i, s)",
                 "scatter (take) source 's' [4,4] must have shape data[:axis] + index + "
                 "data[axis+1:] = [3,4]"},
        BadGraph{"scatter_reduce",
                 "d = f32[10] input\ni = i64[3] input\ns = f32[3] input\n"
                 "o = f32[10] move scatter {axis=0, reduce=\"add\"} (d, i, s)",
                 "scatter attribute 'reduce' must be one of \"none\", \"sum\""},
        BadGraph{"scatter_include_self",
                 "d = f32[10] input\ni = i64[3] input\ns = f32[3] input\n"
                 "o = f32[10] move scatter {axis=0, include_self=2} (d, i, s)",
                 "scatter attribute 'include_self' must be 0 or 1"},
        BadGraph{"scatter_shape",
                 "d = f32[10] input\ni = i64[3] input\ns = f32[3] input\n"
                 "o = f32[11] move scatter {axis=0} (d, i, s)",
                 "scatter output 'o' [11] must have the shape of its data input 'd' [10]"},
        BadGraph{"cast_shape", "x = f32[4] input\nc = bf16[5] move cast (x)",
                 "cast output 'c' [5] must have the shape of input 'x' [4]"},
        BadGraph{"move_two_outputs", "x = f32[4] input\na, b = f32[4], f32[4] move copy (x)",
                 "a copy move has exactly one output, found 2"}));

// ---- structural problems the text form cannot write: built by editing a parsed graph ----

// Rebuilds `g` after `edit` changes its tensors and ops (ids are reassigned in order).
Graph rebuild(const Graph& g,
              const std::function<void(std::vector<Tensor>&, std::vector<Op>&)>& edit) {
  std::vector<Tensor> tensors = g.tensors();
  std::vector<Op> ops = g.ops();
  edit(tensors, ops);
  Graph out;
  for (Tensor& t : tensors) out.add_tensor(t);
  for (Op& op : ops) out.add_op(op);
  return out;
}

constexpr const char* kChain = R"(
x = f32[4] input
w = f32[4] weight
a = f32[4] einsum [i] none mul($0,$1) (x[i], w[i]) -> [i]
b = f32[4]{output} einsum [i] none relu($0) (a[i]) -> [i]
)";

void expect_invalid(const Graph& g, std::string_view substr) {
  std::optional<std::string> why = why_invalid(g);
  ASSERT_TRUE(why) << "verified, wanted: " << substr;
  EXPECT_NE(why->find(substr), std::string::npos) << "message: " << *why << "\nwanted: " << substr;
  try {
    verify(g);
    ADD_FAILURE() << "verify did not throw";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_EQ(e.message(), *why);
  }
}

TEST(Verify, ValidGraphHasNoReason) {
  Graph g = parse_graph(kChain);
  EXPECT_EQ(why_invalid(g), std::nullopt);
  EXPECT_NO_THROW(verify(g));
}

TEST(Verify, ZeroExtentsAreLegal) {
  // An empty tensor, and a reduction over nothing: no element read, so no subscript checked
  Graph g = parse_graph(R"(
    x = f32[4,0] input
    y = f32[4,0] einsum [i=4,j=0] none $0 (x[i,j]) -> [i,j]
    s = f32[4] einsum [i=4,j=0] sum $0 (x[i,j]) -> [i]
    z = f32[4] einsum [i=4,j=0] sum $0 (x[i,j+7]) -> [i])");
  EXPECT_EQ(why_invalid(g), std::nullopt);
}

TEST(Verify, DanglingInput) {
  Graph g = rebuild(parse_graph(kChain), [](auto& tensors, auto& ops) {
    tensors.push_back(Tensor{{}, "ghost", {4}, DType::F32, Role::Intermediate, {}, {}});
    ops[1].inputs[0] = TensorId{4};
  });
  expect_invalid(g, "op 'b': input 'ghost' is dangling: it is intermediate but no op produces it");
}

TEST(Verify, DanglingUnusedTensor) {
  Graph g = rebuild(parse_graph(kChain), [](auto& tensors, auto&) {
    tensors.push_back(Tensor{{}, "lost", {4}, DType::F32, Role::Output, {}, {}});
  });
  expect_invalid(g, "tensor 'lost' is dangling: it is output but no op produces it");
}

TEST(Verify, UseBeforeDefinition) {
  Graph g = rebuild(parse_graph(kChain), [](auto&, auto& ops) { std::swap(ops[0], ops[1]); });
  expect_invalid(g, "op 'b': input 'a' is used before op 'a' produces it");
}

TEST(Verify, OwnOutputAsInput) {
  Graph g = rebuild(parse_graph(kChain), [](auto&, auto& ops) { ops[1].inputs[0] = TensorId{3}; });
  expect_invalid(g, "op 'b': input 'b' is the op's own output");
}

TEST(Verify, ProducedTwice) {
  Graph g = rebuild(parse_graph(kChain), [](auto&, auto& ops) {
    ops[1].outputs[0] = TensorId{2};
    ops[1].name = "b2";
  });
  expect_invalid(g, "op 'b2': output 'a' is already produced by op 'a'");
}

TEST(Verify, SourceProduced) {
  Graph g = rebuild(parse_graph(kChain), [](auto&, auto& ops) { ops[0].outputs[0] = TensorId{1}; });
  expect_invalid(g, "output 'w' is a graph weight and cannot be produced by an op");
}

TEST(Verify, BadTensorId) {
  Graph g = rebuild(parse_graph(kChain), [](auto&, auto& ops) { ops[0].inputs[1] = TensorId{99}; });
  expect_invalid(g, "op 'a': input 1 refers to tensor id 99, which does not exist");
}

TEST(Verify, DuplicateNames) {
  Graph g = parse_graph(kChain);
  g.tensor(TensorId{1}).name = "x";
  expect_invalid(g, "tensor name 'x' is used twice");
  Graph h = rebuild(parse_graph(kChain), [](auto&, auto& ops) { ops[1].name = "a"; });
  expect_invalid(h, "op name 'a' is used twice");
}

TEST(Verify, NegativeDimension) {
  Graph g = parse_graph(kChain);
  g.tensor(TensorId{0}).shape = {4, -1};
  expect_invalid(g, "tensor 'x' has shape [4,-1]: dimension 1 is negative");
}

TEST(Verify, OperandCountAndCombine) {
  Graph base = parse_graph(kChain);
  expect_invalid(rebuild(base,
                         [](auto&, auto& ops) {
                           std::get<EinsumOp>(ops[0].body).operands.pop_back();
                         }),
                 "op 'a': has 2 inputs but 1 operand subscript");
  expect_invalid(rebuild(base,
                         [](auto&, auto& ops) {
                           std::get<EinsumOp>(ops[0].body).combine = Expr();
                         }),
                 "op 'a': has no combine expression");
  expect_invalid(rebuild(base,
                         [](auto&, auto& ops) {
                           std::get<EinsumOp>(ops[0].body).indices[0].name = "not an id";
                         }),
                 "index #0 is named 'not an id', which is not an identifier");
  expect_invalid(rebuild(base,
                         [](auto&, auto& ops) {
                           std::get<EinsumOp>(ops[0].body).mask.push_back(
                               AffineConstraint{AffineExpr::index(5)});
                         }),
                 "mask constraint 0 refers to index #5 but the op has 1 indices");
  // A deep combine built by hand (the parsers refuse it) is refused here too.
  expect_invalid(rebuild(base,
                         [](auto&, auto& ops) {
                           Expr e = std::get<EinsumOp>(ops[1].body).combine;
                           for (int i = 0; i < 300; ++i) e = Expr::make(ExprOp::Neg, {e});
                           std::get<EinsumOp>(ops[1].body).combine = e;
                         }),
                 "combine expression nests deeper than 256 levels");
}

TEST(Verify, OpaqueAndUnanalyzed) {
  Graph base = parse_graph(R"(
x = f32[4] input
s = f32[4] opaque "sort" {vector_flops=8, special_ops=0, bytes=32, assumption="bitonic"} (x)
f = f32[4] unanalyzed "aten::fft" (x)
)");
  expect_invalid(rebuild(base, [](auto&, auto& ops) { ops[0].outputs.clear(); }),
                 "op 's': an opaque op needs at least one output");
  expect_invalid(rebuild(base,
                         [](auto&, auto& ops) {
                           std::get<OpaqueOp>(ops[0].body).attrs["bytes"] = std::int64_t{1};
                         }),
                 "attribute 'bytes' of an opaque op is a field, not an attribute");
  expect_invalid(rebuild(base,
                         [](auto&, auto& ops) {
                           std::get<UnanalyzedOp>(ops[1].body).framework_op.clear();
                         }),
                 "op 'f': an unanalyzed op needs its framework op name");
}

TEST(Verify, ErrorCarriesTheOpOrigin) {
  try {
    parse_graph("x = f32[4] input\n\ny = f32[5] einsum [i] none $0 (x[i]) -> [i] from "
                "\"aten::relu\" at \"model.py:7\"",
                "g.txt");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.origin().file, "model.py");
    EXPECT_EQ(e.origin().line, 7);
    EXPECT_EQ(e.origin().op, "aten::relu");
    EXPECT_NE(std::string(e.what()).find("model.py:7: op 'aten::relu': op 'y': index 'i'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Verify, AcceptsLegalMoves) {
  // Each of these is the legal counterpart of a rejected case above.
  Graph g = parse_graph(R"(
x = f32[2,3] input
d = f32[10,4] input
i = i32[3] input
b = f32[1,3] input
v = f32[3,2] move view (x)
e = f32[4,2,3] move view (b)
r = f32[4,6] move copy (x)
s = f32[1,2] move slice {starts=[1,0], ends=[2,3], steps=[1,2]} (x)
c = f32[3,3] move concat {axis=0} (x, b)
p = f32[3,7] move pad {pads=[0,1,2,2], value=-inf} (x)
g = f32[3,4] move gather {axis=0} (d, i)
h = f32[10,4] move scatter {axis=0, mode="take", reduce="sum"} (d, i, g)
ie = i32[3,4] input
ge = f32[3,4] move gather {axis=0, mode="elements"} (d, ie)
he = f32[10,4] move scatter {axis=0, reduce="max", include_self=0} (d, ie, ge)
k = bf16[2,3] move cast (x)
u = i8[24] move view (x)
t = f32[3,2] move permute {perm=[1,0]} (x)
y = f32[2,3] einsum [n=2,c=3,k=3] max $0 (x[n,c+k-1] pad -inf) -> [n,c]
)");
  EXPECT_EQ(why_invalid(g), std::nullopt);
}

}  // namespace
}  // namespace solar::ir
