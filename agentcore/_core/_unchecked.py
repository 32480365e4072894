"""Constructors that skip a frozen attrs class's validators, generated from its fields.

A streaming reply rebuilds its content block on every delta, and the loop builds a `Context` on
every model call from messages it has just checked: their validators would check again what
the caller made a moment ago, on the hottest paths. attrs' `validators.disabled()` cannot help
there: it is process-global, so another thread would build unchecked values meanwhile.

`unchecked_constructor(cls)` writes, from `attrs.fields(cls)`, the function that sets each
field as the class's own `__init__` does (`object.__setattr__` on a new instance), without the
validators: the fields in order as its parameters, with the same defaults (a factory called per
instance). A field added to the class later is set too, to its default when the caller leaves
it out. The source is generated once, as attrs generates `__init__`, so a call costs what a
hand-written one would. What it cannot reproduce (a converter, a `__attrs_post_init__`) is
refused when the constructor is made, not skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs
from attrs import AttrsInstance

__all__ = ["unchecked_constructor"]

T = TypeVar("T", bound=AttrsInstance)


def unchecked_constructor(cls: type[T]) -> Callable[..., T]:
    """A constructor of the attrs class `cls` that runs none of its validators.

    Call it only with values the validators would pass: it checks nothing. Raises `TypeError`
    for a class it would build differently from its `__init__`: with a converter, a field left
    out of `__init__`, a factory that takes `self`, or an `__attrs_pre_init__` or
    `__attrs_post_init__`.
    """
    if hasattr(cls, "__attrs_pre_init__") or hasattr(cls, "__attrs_post_init__"):
        raise TypeError(f"{cls.__name__} has a pre- or post-init: build it with its __init__")
    namespace: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__,
                                 "_cls": cls, "_NOTHING": attrs.NOTHING}
    params: list[str] = []
    keyword_only: list[str] = []
    body: list[str] = []
    for n, field in enumerate(attrs.fields(cls)):
        if field.converter is not None or not field.init:
            raise TypeError(f"{cls.__name__}.{field.name} has a converter or is no __init__ "
                            "parameter: build it with its __init__")
        name, default = field.alias, field.default
        if default is attrs.NOTHING:
            param = name
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]  # a class, typed as a function
            if default.takes_self:
                raise TypeError(f"{cls.__name__}.{field.name}'s factory takes self: build it "
                                "with its __init__")
            namespace[f"_factory{n}"] = default.factory
            param = f"{name}=_NOTHING"
            body.append(f"    if {name} is _NOTHING:\n        {name} = _factory{n}()")
        else:
            namespace[f"_default{n}"] = default
            param = f"{name}=_default{n}"
        (keyword_only if field.kw_only else params).append(param)
        body.append(f"    _set(_self, {field.name!r}, {name})")
    if keyword_only:
        params += ["*", *keyword_only]
    source = (f"def unchecked({', '.join(params)}):\n    _self = _new(_cls)\n"
              + "".join(line + "\n" for line in body) + "    return _self\n")
    exec(compile(source, f"<unchecked {cls.__qualname__}>", "exec"), namespace)
    made: Callable[..., T] = namespace["unchecked"]
    made.__qualname__ = f"unchecked_constructor({cls.__qualname__})"
    made.__doc__ = f"A `{cls.__qualname__}` built without its validators."
    return made
