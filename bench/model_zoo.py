"""The rest of issue 22's model families for bench/bench_models.py, each with random weights and
one input tensor: torchvision's DeepLabV3, Swin-T, ViT-B/16, DenseNet-121 and GoogLeNet, and
Hugging Face's ViT-B/16, GPT-2, DistilBERT, the T5 and BART encoders, and the Whisper and wav2vec2
encoders, built from their configuration classes' defaults (nothing is downloaded).

Each builder returns `(model, make_input)` as bench_models' own do: `model(input)` gives one tensor
(a wrapper takes `last_hidden_state` or `out` where the model returns a structure), and
`make_input(batch)` a CPU tensor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Builder = Callable[[], tuple[Any, Callable[[int], Any]]]
SEQUENCE = 128


def _one_output(model: Any, pick: Callable[[Any], Any]) -> Any:
    """`model` wrapped so its forward returns `pick(model(x))`, in eval mode."""
    from torch import nn

    class OneOutput(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, x: Any) -> Any:
            return pick(self.inner(x))

    return OneOutput().eval()


def _images(batch: int) -> Any:
    import torch

    return torch.randn(batch, 3, 224, 224)


def _token_ids(vocabulary: int) -> Callable[[int], Any]:
    def make(batch: int) -> Any:
        import torch

        return torch.randint(0, vocabulary, (batch, SEQUENCE))

    return make


def _torchvision(constructor: str, pick: Callable[[Any], Any] | None = None, **kwargs: Any) -> Builder:
    def build() -> tuple[Any, Callable[[int], Any]]:
        import torch
        import torchvision

        torch.manual_seed(0)
        namespace = torchvision.models
        *packages, function = constructor.split(".")
        for package in packages:  # segmentation models live in torchvision.models.segmentation
            namespace = getattr(namespace, package)
        model = getattr(namespace, function)(weights=None, **kwargs).eval()
        return (model if pick is None else _one_output(model, pick)), _images

    return build


def _hugging_face(
    model_class: str, config_class: str, make_input: Callable[[int], Any], encoder: bool = False, **config: Any
) -> Builder:
    """A transformers model from its configuration's defaults (eager attention: the masks and
    softmax as the library writes them), its `last_hidden_state` as the output."""

    def build() -> tuple[Any, Callable[[int], Any]]:
        import torch
        import transformers

        torch.manual_seed(0)
        configuration = getattr(transformers, config_class)(**config)
        configuration._attn_implementation = "eager"
        model = getattr(transformers, model_class)(configuration)
        if encoder:
            model = model.get_encoder()
        return _one_output(model.eval(), lambda out: out.last_hidden_state), make_input

    return build


def _audio_features(batch: int) -> Any:
    import torch

    return torch.randn(batch, 80, 3000)  # Whisper: 30 s of 80 log-mel bins


def _waveform(batch: int) -> Any:
    import torch

    return torch.randn(batch, 16000)  # wav2vec2: one second at 16 kHz


ZOO: dict[str, Builder] = {
    "deeplabv3": _torchvision(
        "segmentation.deeplabv3_mobilenet_v3_large", lambda out: out["out"], weights_backbone=None
    ),
    "swin_t": _torchvision("swin_t"),
    "vit_b16": _torchvision("vit_b_16"),
    "densenet121": _torchvision("densenet121"),
    "googlenet": _torchvision("googlenet", aux_logits=False, init_weights=True),
    "hf_vit_b16": _hugging_face("ViTModel", "ViTConfig", _images),
    "gpt2": _hugging_face("GPT2Model", "GPT2Config", _token_ids(50257)),
    "distilbert": _hugging_face("DistilBertModel", "DistilBertConfig", _token_ids(30522)),
    "t5_encoder": _hugging_face("T5EncoderModel", "T5Config", _token_ids(32128)),
    "bart_encoder": _hugging_face("BartModel", "BartConfig", _token_ids(50265), encoder=True),
    "whisper_encoder": _hugging_face("WhisperModel", "WhisperConfig", _audio_features, encoder=True),
    "wav2vec2": _hugging_face("Wav2Vec2Model", "Wav2Vec2Config", _waveform),
}
