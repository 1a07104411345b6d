"""What liveprof names a Ruby method's frame, read from the script's source.

Ruby's rb_profile_frame_full_label() (3.4's backtraces) qualifies a method
by the class it is defined in: `Handler#call`, `Handler.build` for
`def self.build`, `Object#unit` for a def at the top level, and a block by
the method it is in (`block in Handler#call`). The class is the innermost
`class`/`module` enclosing the def in the source (by indentation, as the
workloads are written); nested ones are joined with `::`.
"""

import re
from pathlib import Path


def qualified(script, func):
    """'Class#func' or 'Class.func' of the first def of @func in @script."""
    scopes = []  # (indent, name) of the open class/module bodies
    for text in Path(script).read_text().splitlines():
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        indent = len(text) - len(text.lstrip())
        while scopes and indent <= scopes[-1][0] and not text.strip().startswith("end"):
            scopes.pop()
        m = re.match(r"\s*(?:class|module)\s+([A-Z][\w:]*)", text)
        if m:
            scopes.append((indent, m.group(1)))
            continue
        m = re.match(rf"\s*def (self\.)?{re.escape(func)}\b", text)
        if m:
            owner = "::".join(s for _, s in scopes) or "Object"
            return f"{owner}{'.' if m.group(1) else '#'}{func}"
    raise AssertionError(f"no def {func} in {script}")


def frame(script, func, line=None):
    """'Class#func (script.rb:N)', N the line of the def unless given."""
    if line is None:
        line = next(no for no, text in enumerate(Path(script).read_text().splitlines(), 1)
                    if re.match(rf"\s*def (self\.)?{re.escape(func)}\b", text))
    return f"{qualified(script, func)} ({Path(script).name}:{line})"
