"""The Einsum ONNX operator, built as MIGraphX's einsum op builder does: inputs diagonalised,
transposed and unsqueezed onto one label space, multiplied pairwise with batched dots, reduced."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from mgxir.ir.builtin import make_literal as literal_op
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError, make_literal
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]
Row = list[int]

_TOKENS = re.compile(r"\s+|[A-Za-z]+|->|\.\.\.|,|.", re.S)
_ERR = "einsum op_builder: "


@dataclass
class _Equation:
    explicit: bool = False
    input_terms: list[str] = field(default_factory=list)
    output_term: str = ""
    label_count: dict[str, int] = field(default_factory=dict)
    duplicates: list[dict[str, list[int]]] = field(default_factory=list)
    ellipsis_ndim: int = 0


def _parse_equation(equation: str) -> _Equation:
    eq = _Equation()
    term = ""
    has_ellipsis = False
    for token in _TOKENS.findall(equation):
        if token[0].isspace():
            continue
        if token[0].isalpha():
            term += token
            if not eq.explicit:
                for c in token:
                    eq.label_count[c] = eq.label_count.get(c, 0) + 1
        elif token == "->":
            if eq.explicit:
                raise ParseError(_ERR + "Einsum equation has multiple '->' symbols")
            if not term:
                raise ParseError(_ERR + "No term specified before '->' symbol")
            eq.explicit, has_ellipsis = True, False
            eq.input_terms.append(term)
            term = ""
        elif token == "...":
            if has_ellipsis:
                raise ParseError(_ERR + "Ellipsis can only appear once per einsum equation term")
            has_ellipsis = True
            term += "*"
        elif token == ",":
            if eq.explicit:
                raise ParseError(_ERR + "Einsum equation can't have a ',' symbol in the output")
            if not term:
                raise ParseError(_ERR + "No term specified before ',' symbol")
            has_ellipsis = False
            eq.input_terms.append(term)
            term = ""
    if eq.explicit:
        eq.output_term = term
    elif term:
        eq.input_terms.append(term)
    else:
        raise ParseError(_ERR + "Last input term is missing")
    eq.label_count = dict(sorted(eq.label_count.items()))
    return eq


def _analyze(equation: str, args: Args) -> _Equation:
    eq = _parse_equation(equation)
    if len(eq.input_terms) != len(args):
        raise ParseError(
            f"Number of terms in the input equation - {len(eq.input_terms)} does not match the number of inputs "
            f"{len(args)}"
        )
    ellipsis_ndim = 0
    for i, (term, arg) in enumerate(zip(eq.input_terms, args)):
        rank = arg.shape.ndim
        current = 0
        for label in term:
            if label == "*":
                dims = rank - len(term) + 1
                if ellipsis_ndim > 0 and dims != ellipsis_ndim:
                    raise ParseError(
                        _ERR + "Every occurrence of ellipsis in the equation must represent the same number of "
                        "dimensions"
                    )
                ellipsis_ndim = dims
                current += dims
            else:
                current += 1
        if current != rank:
            raise ParseError(
                _ERR + f"Number of labels in {i + 1}. input_term ({term}) does not match the rank "
                f"({rank}) of corresponding input"
            )
    eq.ellipsis_ndim = ellipsis_ndim
    if eq.output_term:
        for label in eq.output_term:
            if label not in eq.label_count and label != "*":
                raise ParseError(
                    _ERR + f"Output term contains label {ord(label)}, which is not present in any of the input terms"
                )
        if ellipsis_ndim != 0 and "*" not in eq.output_term:
            raise ParseError(_ERR + "Output term does not contain ellipsis (...) even though an input term does")
    elif not eq.explicit:
        eq.output_term = ("*" if ellipsis_ndim else "") + "".join(c for c, n in eq.label_count.items() if n == 1)
    for term in eq.input_terms:
        axes: dict[str, list[int]] = {}
        for i, label in enumerate(term):
            axes.setdefault(label, []).append(i)
        eq.duplicates.append({k: v for k, v in sorted(axes.items()) if len(v) >= 2})
    return eq


def _mapping_matrix(eq: _Equation, terms: list[str]) -> list[Row]:
    column = {label: i for i, label in enumerate(eq.label_count)}
    ncols = len(eq.label_count) + eq.ellipsis_ndim
    matrix = []
    for term in terms:
        row = [-1] * ncols
        col_id = 0
        for label in term:
            if label == "*":
                row[ncols - eq.ellipsis_ndim :] = range(col_id, col_id + eq.ellipsis_ndim)
                col_id += eq.ellipsis_ndim
            else:
                row[column[label]] = col_id
                col_id += 1
        matrix.append(row)
    return matrix


def _invert(perm: list[int]) -> list[int]:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return out


class _Builder:
    def __init__(self, info: NodeInfo, matrix: list[Row]):
        self.info = info
        self.matrix = matrix
        self.ncols = len(matrix[0])
        self.pair: list[Row] = [[-1] * self.ncols, [-1] * self.ncols]

    def later_column(self, d: int, input_idx: int) -> list[int]:
        return [row[d] for row in self.matrix[input_idx + 1 :]]

    def transpose(self, op: Instruction, perm: list[int], row: Row) -> tuple[Instruction, Row]:
        return self.info.add("transpose", op, permutation=perm), [row[p] for p in perm]

    def reduce_sum(self, op: Instruction, axes: list[int], row: Row) -> Instruction:
        if not axes:
            return op
        for a in axes:
            row[a] = -1
        return self.info.add("reduce_sum", op, axes=axes)

    def preprocess(self, op: Instruction, duplicates: dict[str, list[int]], input_idx: int) -> Instruction:
        if duplicates:
            op = self.gather_diagonal(op, list(duplicates.values()))
        op = self.transpose_unsqueeze(op)
        red = [
            d
            for d in range(self.ncols)
            if all(v == -1 for v in self.later_column(d, input_idx)) and self.pair[1][d] != -1 and self.pair[0][d] == -1
        ]
        return self.reduce_sum(op, red, self.pair[1])

    def gather_diagonal(self, op: Instruction, diag: list[list[int]]) -> Instruction:
        if len(diag) != 1:
            raise ParseError(
                _ERR + "Parsing of equations with more than one duplicated labels per input term is not implemented"
            )
        lens = op.shape.lens
        axes = diag[0]
        first = axes[0]
        if any(lens[first] != lens[a] for a in axes):
            raise ParseError(_ERR + "All duplicate labels have to be the same dimension")
        batch_axes = [a for a in range(len(lens)) if a not in axes]
        if any(b >= axes[0] for b in batch_axes):
            raise ParseError(
                _ERR + "Parsing of equations with duplicated labels and batch axes that are not the outer-most axes, "
                "is not implemented"
            )
        batch_size = math.prod(lens[b] for b in batch_axes)
        indices = np.repeat(np.arange(lens[first]), len(axes))
        indices = np.tile(indices, batch_size)
        index_lens = [lens[first], len(axes)]
        if batch_size > 1:
            index_lens.insert(0, batch_size)
        lit = make_literal(indices, DType.int64, index_lens)
        index_arg = self.info.module.insert(None, literal_op(lit), (), (), lit.shape)
        op = self.info.add("gathernd", op, index_arg, batch_dims=len(batch_axes))
        row = self.pair[1]
        row[:] = [first if r in axes else r for r in row]
        for t in axes[1:]:
            row[:] = [r - 1 if r > t else r for r in row]
        return op

    def transpose_unsqueeze(self, op: Instruction) -> Instruction:
        perm = [r for r in self.pair[1] if r != -1]
        unsqueeze_axes = [i for i, r in enumerate(self.pair[1]) if r == -1]
        op, perm = self.transpose(op, perm, perm)
        for axis in unsqueeze_axes:
            perm.insert(axis, -1)
        self.pair[1] = perm
        return self.info.add("unsqueeze", op, axes=unsqueeze_axes)

    def process_pair(self, op1: Instruction, op2: Instruction, input_idx: int) -> Instruction:
        batch, left, right, summed = [], [], [], []
        for d in range(self.ncols):
            if self.pair[0][d] != -1 and self.pair[1][d] != -1:
                (batch if any(v != -1 for v in self.later_column(d, input_idx)) else summed).append(d)
            elif self.pair[0][d] >= 0:
                left.append(d)
            elif self.pair[1][d] >= 0:
                right.append(d)
            else:
                batch.append(d)
        perm = batch + left + right + summed
        op1, self.pair[0] = self.transpose(op1, perm, self.pair[0])
        op2, self.pair[1] = self.transpose(op2, perm, self.pair[1])
        new_batch = list(range(len(batch)))
        new_sum = list(range(len(perm) - len(summed), len(perm)))
        op1, op2 = self.broadcast(op1, op2, sorted(set(new_batch) | set(new_sum)))
        op = self.batch_dot(op1, op2, new_batch, new_sum)
        op, self.pair[1] = self.transpose(op, _invert(perm), self.pair[1])
        return op

    def broadcast(self, opl: Instruction, opr: Instruction, common: list[int]) -> tuple[Instruction, Instruction]:
        llens, rlens = list(opl.shape.lens), list(opr.shape.lens)
        lbc = rbc = False
        for axis in common:
            if llens[axis] == 1 and rlens[axis] == 1:
                continue
            if llens[axis] == 1:
                lbc, llens[axis] = True, rlens[axis]
            if rlens[axis] == 1:
                rbc, rlens[axis] = True, llens[axis]
        if lbc:
            opl = self.info.add("multibroadcast", opl, out_lens=llens)
        if rbc:
            opr = self.info.add("multibroadcast", opr, out_lens=rlens)
        return opl, opr

    def batch_dot(self, op1: Instruction, op2: Instruction, batch: list[int], summed: list[int]) -> Instruction:
        l1, l2 = op1.shape.lens, op2.shape.lens
        dims1 = [math.prod(l1[a] for a in batch), -1, math.prod(l1[a] for a in summed)]
        dims2 = [math.prod(l2[a] for a in batch), -1, math.prod(l2[a] for a in summed)]
        op1 = self.info.add("reshape", op1, dims=dims1)
        op2 = self.info.add("reshape", op2, dims=dims2)
        op2 = self.info.add("transpose", op2, permutation=[0, 2, 1])
        op = self.info.add("dot", op1, op2)
        new_lens = [1] * len(l1)
        for i in range(len(l1) - len(summed)):
            new_lens[i] = max(l1[i], l2[i])
        op = self.info.add("reshape", op, dims=new_lens)
        self.pair[1] = [max(a, b) for a, b in zip(self.pair[0], self.pair[1])]
        for a in summed:
            self.pair[1][a] = -1
        return op

    def finalize(self, op: Instruction) -> Instruction:
        output = self.matrix[-1]
        if any(v >= 0 for v in output):
            self.pair[1] = list(output)
            red = [d for d in range(self.ncols) if self.pair[0][d] > 0 and self.pair[1][d] == -1]
            op = self.reduce_sum(op, red, self.pair[1])
        squeeze_axes = [i for i, r in enumerate(output) if r == -1]
        perm = [r for r in output if r != -1]
        if squeeze_axes:
            op = self.info.add("squeeze", op, axes=squeeze_axes)
        if perm:
            op, perm = self.transpose(op, _invert(perm), perm)
            for axis in squeeze_axes:
                perm.insert(axis, -1)
            self.pair[1] = perm
        return op


@onnx_op("Einsum")
def parse_einsum(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if not info.has("equation"):
        raise ParseError("Equation attribute is required")
    eq = _analyze(info.attr_str("equation") or "", args)
    matrix = _mapping_matrix(eq, [*eq.input_terms, eq.output_term])
    builder = _Builder(info, matrix)
    last: Instruction | None = None
    op = args[0]
    for idx, arg in enumerate(args):
        builder.pair[1] = list(matrix[idx])
        op = builder.preprocess(arg, eq.duplicates[idx], idx)
        if last is not None:
            op = builder.process_pair(last, op, idx)
        last = op
        builder.pair[0] = builder.pair[1]
    return builder.finalize(op)
