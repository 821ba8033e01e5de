#!/usr/bin/env python3
"""Generates checker benchmark inputs.

  generate.py training <lines> <out.cpp>   a training file of about <lines>
                                           lines: many functions in the shapes
                                           of docs/ground-truth.md (buggy and fixed)
  generate.py function <units> <out.cpp>   one function of <units> blocks, each
                                           with a forward, a sigmoid of it, a
                                           branch, every fifth an in-place
                                           write of the sigmoid and every
                                           tenth a backward
  generate.py branches <n> <out.cpp>       one function of <n> if/else
                                           statements in a row, each branch a
                                           DDP forward or a tensor op added to
                                           one loss, then one backward
  generate.py loops <n> <out.cpp>          one function of <n> nested loops,
                                           each level a DDP forward added to
                                           one loss, the innermost a backward
"""
import sys

HEADER = """#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc(register_module("fc", torch::nn::Linear(16, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))) {}
  torch::Tensor forward(torch::Tensor x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Net);
using PG = c10::intrusive_ptr<c10d::ProcessGroup>;
using DDP = ddpguard::DistributedDataParallel<Net>;

torch::Tensor encode(DDP &model, const torch::Tensor &x) { return model(x); }
"""

SHAPES = [
    """void contrastive{i}(Net net, PG pg, torch::Tensor batch) {{
  DDP model(net, pg);
  auto z1 = model(batch + 0.1 * torch::randn_like(batch));
  auto z2 = model(batch - 0.1 * torch::randn_like(batch));
  auto loss = torch::matmul(z1, z2.t()).diagonal().mean();
  loss.backward();
}}
""",
    """void fixed{i}(Net net, PG pg, torch::Tensor a, torch::Tensor b) {{
  DDP model(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = model(a);
  auto o2 = model(b);
  (o1 + o2).sum().backward();
}}
""",
    """void perIteration{i}(Net net, PG pg, std::vector<torch::Tensor> xs) {{
  DDP model(net, pg);
  for (const auto &x : xs) {{
    auto loss = model(x).pow(2).mean();
    if (loss.item<float>() > 100)
      continue;
    loss.backward();
  }}
}}
""",
    """void accumulate{i}(Net net, PG pg, std::vector<torch::Tensor> xs) {{
  DDP model(net, pg);
  torch::Tensor loss = torch::zeros({{1}});
  for (const auto &x : xs)
    loss = loss + model(x).sum();
  loss.backward();
}}
""",
    """void helpers{i}(Net net, PG pg, torch::Tensor a, torch::Tensor b) {{
  DDP model(net, pg);
  auto z1 = encode(model, a);
  auto z2 = encode(model, b);
  (z1 * z2).sum().backward();
}}
""",
    """void inPlace{i}(Net net, PG pg, torch::Tensor x) {{
  DDP model(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto gate = torch::sigmoid(model(x));
  gate.mul_(2);
  auto h = model(x) * gate;
  h += x;
  h.sum().backward();
}}
""",
    """torch::Tensor plainMath{i}(torch::Tensor a, torch::Tensor b) {{
  auto c = torch::matmul(a, b.t());
  for (int k = 0; k < 3; ++k)
    c = torch::relu(c) + a.sum();
  return c / 2.0;
}}
""",
]


def training(lines):
    out = [HEADER]
    count = HEADER.count("\n")
    i = 0
    while count < lines:
        shape = SHAPES[i % len(SHAPES)].format(i=i)
        out.append(shape + "\n")
        count += shape.count("\n") + 1
        i += 1
    return "".join(out)


def function(units):
    body = ["""void longStep(Net n0, Net n1, Net n2, Net n3, PG pg, torch::Tensor x,
              torch::Tensor y, bool flag) {
  DDP d0(n0, pg), d1(n1, pg), d2(n2, pg), d3(n3, pg);
  torch::Tensor loss = torch::zeros({1});
"""]
    for i in range(units):
        body.append(f"""  {{
    auto a{i} = d{i % 4}({'x' if i % 2 else 'y'});
    auto s{i} = torch::sigmoid(a{i});
    if (flag)
      loss = loss + (a{i} * s{i}).sum();
""")
        if i % 5 == 4:
            body.append(f"    s{i}.mul_(2);\n")
        if i % 10 == 9:
            body.append("    loss.backward();\n    loss = torch::zeros({1});\n")
        body.append("  }\n")
    body.append("}\n")
    return HEADER + "".join(body)


def branches(n):
    """n if/else statements in a row: forwards on d0/d1 or plain tensor ops,
    all summed into one loss that is backwarded once at the end (so every
    forward on d0 but the last is a hazard, like every one on d1)."""
    body = ["""void manyBranches(Net n0, Net n1, PG pg, torch::Tensor x,
                  std::vector<bool> flags) {
  DDP d0(n0, pg), d1(n1, pg);
  torch::Tensor loss = torch::zeros({1});
"""]
    for i in range(n):
        body.append(f"""  if (flags[{i}])
    loss = loss + d{i % 2}(x).sum();
  else
    loss = loss + (x * {i}.5).sum();
""")
    body.append("  loss.backward();\n}\n")
    return HEADER + "".join(body)


def loops(n):
    """n nested loops; each level forwards on d into one loss, the innermost
    also backwards it (so every forward reaches the backward after another
    forward: hazards throughout)."""
    body = ["""void nestedLoops(Net net, PG pg, torch::Tensor x, int steps) {
  DDP d(net, pg);
  torch::Tensor loss = torch::zeros({1});
"""]
    for i in range(n):
        indent = "  " * (i + 1)
        body.append(f"{indent}for (int i{i} = 0; i{i} < steps; ++i{i}) {{\n"
                    f"{indent}  loss = loss + (d(x) * {i}.5).sum();\n")
    body.append("  " * (n + 1) + "loss.backward();\n")
    for i in reversed(range(n)):
        body.append("  " * (i + 1) + "}\n")
    body.append("}\n")
    return HEADER + "".join(body)


if __name__ == "__main__":
    kind, size, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    text = {"training": training, "function": function, "branches": branches,
            "loops": loops}[kind](size)
    with open(path, "w") as f:
        f.write(text)
