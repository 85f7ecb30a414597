"""Loss ONNX operators: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss."""

from __future__ import annotations

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]

_OP_NAMES = {
    "SoftmaxCrossEntropyLoss": "softmaxcrossentropyloss",
    "NegativeLogLikelihoodLoss": "negativelikelihoodloss",
}


def _check_inputs(name: str, scores: Instruction, labels: Instruction) -> None:
    s, lab = scores.shape, labels.shape
    if s.ndim < 2:
        raise ParseError(f"{name}Scores must be two or more dimensions [batch, class_size, D1...Dk]")
    if s.dtype.is_integral:
        raise ParseError(f"{name}: Score must be either half, float, or double type")
    if lab.dtype not in (DType.int32, DType.int64):
        raise ParseError(f"{name}: Labels must either be int32 or int64 types")
    if s.lens[0] != lab.lens[0]:
        raise ParseError(f"{name}: Score and Labels must identical batch size inputs")
    if s.ndim - 1 != lab.ndim:
        raise ParseError(f"{name}: Score and Labels must contain identical K-Dimensions")
    if lab.ndim > 1 and tuple(s.lens[2:]) != tuple(lab.lens[1:]):
        raise ParseError(f"{name}: K-Dimensions must be equal values between score and labels")


def _weights(info: NodeInfo, name: str, args: Args, scores: Instruction, class_size: int) -> Instruction:
    s = scores.shape
    weights = info.add("multibroadcast", info.add_literal(1, s.dtype), out_lens=[class_size])
    if len(args) > 2:
        weights = args[2]
        w = weights.shape
        if w.lens[0] != s.lens[1]:
            raise ParseError(f"{name}: Invalid weight vector shape. Weight must contain weight for each class")
        if w.dtype.is_integral:
            raise ParseError(f"{name}: weight must be either half, float, or double type")
        if w.dtype is not s.dtype:
            raise ParseError(f"{name}: Weight and Scores inputs must be the same type")
    return info.add("neg", weights)


def _gather_indices(info: NodeInfo, labels: Instruction) -> Instruction:
    """(batch, d1, ..., dk, label) coordinates of each label, for gathernd."""
    unsqueezed = info.add("unsqueeze", labels, axes=[-1])
    lens = list(unsqueezed.shape.lens)
    rank = len(lens)
    coordinates = []
    for axis in range(rank - 1):
        index = info.add_literal(np.arange(lens[axis]), labels.shape.dtype, [lens[axis]])
        others = [i for i in range(rank) if i != axis]
        coordinates.append(info.add("multibroadcast", info.add("unsqueeze", index, axes=others), out_lens=lens))
    coordinates.append(unsqueezed)
    return info.add("concat", *coordinates, axis=-1)


def _reduce(info: NodeInfo, loss: Instruction, weights: Instruction, reduction: str, has_weights: bool) -> Instruction:
    loss_axes = list(range(loss.shape.ndim))
    if reduction == "mean" and has_weights:
        total = info.add("reduce_sum", loss, axes=loss_axes)
        weight_total = info.add("neg", info.add("reduce_sum", weights, axes=list(range(weights.shape.ndim))))
        return info.add("div", total, weight_total)
    if reduction == "mean":
        return info.add("reduce_mean", loss, axes=loss_axes)
    if reduction == "sum":
        return info.add("reduce_sum", loss, axes=loss_axes)
    return loss


@onnx_op("SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss")
def parse_softmaxcrossentropyloss(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    name = _OP_NAMES[info.op_type]
    softmax = info.op_type == "SoftmaxCrossEntropyLoss"
    reduction = info.attr_str("reduction", "mean") or ""
    if reduction not in ("mean", "sum", "none"):
        raise ParseError(f"{name}:Invalid reduction mode: {reduction}\n Valid options are [none, mean, sum]")
    scores, labels = args[0], args[1]
    _check_inputs(name, scores, labels)
    scores_shape = scores.shape
    ndims = scores_shape.ndim
    class_size = scores_shape.lens[1]
    k_dim = ndims >= 3 and not (ndims == 3 and scores_shape.lens[2] < 2)
    has_ignore = info.has("ignore_index")
    ignore_value = int(info.attr_int("ignore_index", -1) or 0) if has_ignore else -1
    ignore_index = info.add_literal(ignore_value, DType.int64) if has_ignore else None
    has_weights = len(args) > 2
    weights = _weights(info, name, args, scores, class_size)
    if ignore_index is not None and 0 <= ignore_value < class_size:
        zeros = info.add_literal(np.zeros(weights.shape.elements), weights.shape.dtype, weights.shape.lens)
        weights = info.add("scatter_none", weights, ignore_index, zeros, axis=0)
    if softmax:
        scores = info.add("softmax", scores, axis=1)
    indices = _gather_indices(info, labels)
    # the class axis moved last; MIGraphX sizes this permutation by the class count, so it refuses
    # every model whose rank is not its class count (mgxir's addition: the same program where
    # MIGraphX takes the model, the rank's permutation elsewhere)
    perm = [0, *range(2, ndims), 1]
    if k_dim:
        scores = info.add("transpose", scores, permutation=perm)
    scores = info.add("gathernd", scores, indices)
    weights = info.add("unsqueeze", weights, axes=[0, *range(2, ndims)])
    weights = info.add("multibroadcast", weights, out_lens=scores_shape.lens)
    if k_dim:
        weights = info.add("transpose", weights, permutation=perm)
    weights = info.add("gathernd", weights, indices)
    log_scores = info.add("log", scores) if softmax else scores
    loss = _reduce(info, info.add("mul", log_scores, weights), weights, reduction, has_weights)
    if ignore_index is not None and not 0 <= ignore_value < class_size:
        lens = labels.shape.lens
        ignore_bc = info.add("multibroadcast", ignore_index, out_lens=lens)
        converted = info.add("convert", labels, target_type=DType.int64)
        zeros = info.add_literal(np.zeros(labels.shape.elements), loss.shape.dtype, loss.shape.lens)
        mask = info.add("equal", converted, ignore_bc)
        loss = info.add("where", mask, zeros, loss)
    return [loss, log_scores] if softmax else [loss]
