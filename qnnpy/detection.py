"""torchvision's object detectors through qnnpy: the part of a detector that ``torch.export`` and the quantizers
take, converted, and the rest left to PyTorch, as ExecuTorch and TensorRT deployments of detectors do.

A detector's non-maximum suppression and box decoding select a data-dependent number of boxes, which
``torch.export`` cannot capture (``GuardOnDataDependentSymNode`` in ``torchvision/ops/boxes.py``). The
:class:`DetectorBody` of a model holds what comes before them, on images of the model's fixed input size:

- single-stage detectors (``SSD`` / SSDlite, ``RetinaNet``, ``FCOS``): the backbone (with its feature pyramid or
  extra layers) and the dense heads; the outputs are the heads' tensors, every anchor's class logits and box
  regression (FCOS: and centerness);
- two-stage detectors (``FasterRCNN``, ``MaskRCNN``, ``KeypointRCNN``): the backbone with its feature pyramid and
  the region proposal network's head; the outputs are the feature maps, then each level's objectness, then each
  level's box deltas. The proposals (anchor decoding, NMS), RoIAlign and the box / mask / keypoint heads run
  in PyTorch.

The anchors depend only on the image size and the feature maps' sizes: :func:`detector_body` computes them once.
:meth:`DetectorBody.detections` turns the outputs, from qnnpy's runtime, TVM or PyTorch, into torchvision's
detections with the model's own post-processing.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

import numpy as np
import torch
from torch import nn

# The head outputs each single-stage detector returns, in its dict's order.
_SINGLE_STAGE = {"SSD": ("bbox_regression", "cls_logits"), "RetinaNet": ("cls_logits", "bbox_regression"),
                 "FCOS": ("cls_logits", "bbox_regression", "bbox_ctrness")}
_TWO_STAGE = ("FasterRCNN", "MaskRCNN", "KeypointRCNN")


class _Detector:
    """The whole detector, held outside the body's modules."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model


def _as_dict(features: torch.Tensor | dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return OrderedDict([("0", features)]) if isinstance(features, torch.Tensor) else features


class DetectorBody(nn.Module):
    """The exportable part of a torchvision detector (see the module docstring): ``forward(images)`` takes the
    transformed images ``(N, 3, H, W)`` (:meth:`preprocess`) and returns a tuple of tensors."""

    def __init__(self, model: nn.Module, image_size: tuple[int, int]) -> None:
        from torchvision.models.detection.image_list import ImageList

        super().__init__()
        self.kind = type(model).__name__
        self.two_stage = self.kind in _TWO_STAGE
        self.backbone = model.backbone
        self.head = model.rpn.head if self.two_stage else model.head
        self.image_size = image_size
        self._detector = _Detector(model)  # its post-processing, not a submodule (the body exports without it)
        with torch.no_grad():
            images = model.transform.batch_images([torch.zeros(3, *image_size)])
            features = _as_dict(model.backbone(images))
            generator = model.rpn.anchor_generator if self.two_stage else model.anchor_generator
            self.anchors = generator(ImageList(images, [image_size]), list(features.values()))[0]
        self.feature_names = list(features)
        self.level_sizes = [f.shape[2] * f.shape[3] for f in features.values()]

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, ...]:
        features = list(_as_dict(self.backbone(images)).values())
        if self.two_stage:
            objectness, deltas = self.head(features)
            return (*features, *objectness, *deltas)
        outputs = self.head(features)
        return tuple(outputs[k] for k in _SINGLE_STAGE[self.kind])

    def preprocess(self, images: Sequence[torch.Tensor]) -> tuple[torch.Tensor, list[tuple[int, int]],
                                                                   list[tuple[int, int]]]:
        """The model's own transform (normalization, resizing) of images ``(3, h, w)`` in [0, 1]: the body's input,
        the resized sizes and the original ones (what :meth:`detections` takes). Refuses a batch whose transformed
        size is not the body's."""
        originals = [tuple(int(s) for s in image.shape[-2:]) for image in images]
        with torch.no_grad():
            image_list, _ = self._detector.model.transform(list(images))
        if tuple(image_list.tensors.shape[-2:]) != tuple(self.image_size):
            raise ValueError(f"the {self.kind}'s transform made {tuple(image_list.tensors.shape[-2:])} images; this "
                             f"body takes {self.image_size} (make the body with detector_body(model, image_size) of "
                             "the size the transform gives)")
        return image_list.tensors, [tuple(s) for s in image_list.image_sizes], originals

    def detections(self, outputs: Sequence[np.ndarray | torch.Tensor], image_sizes: list[tuple[int, int]],
                   original_sizes: list[tuple[int, int]]) -> list[dict[str, torch.Tensor]]:
        """torchvision's detections (boxes, labels, scores; masks or keypoints for two-stage models) from the body's
        ``outputs``, by the model's own post-processing in PyTorch."""
        model = self._detector.model
        tensors = [torch.as_tensor(np.asarray(o)) for o in outputs]
        anchors = [self.anchors] * tensors[0].shape[0]
        with torch.no_grad():
            if self.two_stage:
                found = self._two_stage(tensors, anchors, image_sizes)
            elif self.kind == "SSD":
                found = model.postprocess_detections(dict(zip(_SINGLE_STAGE["SSD"], tensors)), anchors, image_sizes)
            else:  # split per level, as RetinaNet's and FCOS's forward do
                per_anchor = tensors[0].shape[1] // sum(self.level_sizes)
                counts = [size * per_anchor for size in self.level_sizes]
                split = {k: list(t.split(counts, dim=1)) for k, t in zip(_SINGLE_STAGE[self.kind], tensors)}
                found = model.postprocess_detections(split, [list(a.split(counts)) for a in anchors], image_sizes)
            return model.transform.postprocess(found, image_sizes, original_sizes)

    def _two_stage(self, tensors: list[torch.Tensor], anchors: list[torch.Tensor],
                   image_sizes: list[tuple[int, int]]) -> list[dict[str, torch.Tensor]]:
        from torchvision.models.detection.image_list import ImageList
        from torchvision.models.detection.rpn import concat_box_prediction_layers

        levels = len(self.feature_names)
        features = OrderedDict(zip(self.feature_names, tensors[:levels]))
        objectness, deltas = tensors[levels:2 * levels], tensors[2 * levels:]
        rpn = self._detector.model.rpn
        counts = [o[0].numel() for o in objectness]
        flat_objectness, flat_deltas = concat_box_prediction_layers(objectness, deltas)
        proposals = rpn.box_coder.decode(flat_deltas, anchors).view(len(anchors), -1, 4)
        boxes, _ = rpn.filter_proposals(proposals, flat_objectness, image_sizes, counts)
        found, _ = self._detector.model.roi_heads(features, boxes, image_sizes)
        return found


def detector_body(model: nn.Module, image_size: tuple[int, int] | None = None) -> DetectorBody:
    """The :class:`DetectorBody` of a torchvision detector in eval mode, for images of ``image_size`` (default:
    the transform's fixed size, as SSD's; else give the size its transform resizes your images to)."""
    kind = type(model).__name__
    if kind not in _SINGLE_STAGE and kind not in _TWO_STAGE:
        raise ValueError(f"{kind} is not a torchvision detector qnnpy knows (SSD, RetinaNet, FCOS, FasterRCNN, "
                         "MaskRCNN, KeypointRCNN)")
    if model.training:
        raise ValueError(f"{kind} is in training mode; call model.eval() first")
    size = image_size or getattr(model.transform, "fixed_size", None)
    if size is None:
        raise ValueError(f"{kind} resizes images by their aspect ratio: give image_size, the (height, width) its "
                         "transform makes of your images (DetectorBody.preprocess checks it)")
    return DetectorBody(model, (int(size[0]), int(size[1])))

