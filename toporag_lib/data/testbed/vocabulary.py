"""The testbed's words, written once: furniture and object names, attributes, spatial relations, the question
families, the cell each one needs and each family's answers."""

from __future__ import annotations

SURFACES = ("table", "shelf", "desk", "counter")
ITEMS = ("cup", "book", "lamp", "box", "vase", "plate", "bowl", "bottle", "clock", "candle", "mug", "phone",
         "plant", "basket", "jar", "remote")
COLOURS = ("red", "blue", "green", "white", "black", "yellow", "brown", "gray")
MATERIALS = ("wooden", "metal", "glass", "plastic", "ceramic")
SPATIAL = {"to the left of": "to the right of", "to the right of": "to the left of",
           "in front of": "behind", "behind": "in front of"}  # each relation -> its inverse
QUERIES = {"colour": 0, "material": 1}  # position of the attribute in an object's `attributes`
FAMILIES = ("attribute", "path", "loop")
NEEDS = {"attribute": "0-cell", "path": "1-cell", "loop": "2-cell"}
YES_NO = {"yes": "no", "no": "yes"}
ANSWERS = {"attribute": COLOURS + MATERIALS, "path": ITEMS + SURFACES, "loop": ("yes", "no")}  # per family, closed
