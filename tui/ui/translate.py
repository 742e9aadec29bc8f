"""Key bindings in the UI language (issue 14).

BINDINGS are class attributes, evaluated once when a module is imported, possibly before the
language is chosen (tests switch it at will). They are written in English and marked with
N_() for the catalog; `Translated` swaps each node's copy of them for one whose description and
tooltip are in the language current when the node is built. Keymap overrides still apply (the
binding ids are kept)."""

import dataclasses

from tui.core.i18n import _


def translated(binding):
    return dataclasses.replace(
        binding,
        description=_(binding.description) if binding.description else binding.description,
        tooltip=_(binding.tooltip) if binding.tooltip else binding.tooltip)


def translate_bindings(node):
    """Replace the node's own bindings map (a per-instance copy) with translated bindings."""
    bindings = node._bindings
    bindings.key_to_bindings = {key: [translated(b) for b in group]
                                for key, group in bindings.key_to_bindings.items()}


class Translated:
    """Mixin for screens, the app and widgets with BINDINGS: put it first in the bases."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        translate_bindings(self)
