"""Prints a program whose `if` branches nest N deep: `main` -> L1_if -> L2_if -> ... -> LN_if (neg x);
every else branch is exp(x). Usage: nested_if.py N"""

import sys

depth = int(sys.argv[1])
lines = [
    'module: "main"',
    "x = @param:x -> float_type, {2}, {1}",
    "cond = @param:cond -> bool_type, {1}, {0}",
    "@2 = if(cond), [L1_if, L1_else]",
    "@3 = get_tuple_elem[index=0](@2)",
    "@4 = @return(@3)",
    "",
]
for level in range(1, depth + 1):
    then, other = f"L{level}_if", f"L{level}_else"
    lines.append(f'module: "{then}"')
    if level < depth:
        lines += [
            f"{then}:@0 = if(cond), [L{level + 1}_if, L{level + 1}_else]",
            f"{then}:@1 = get_tuple_elem[index=0]({then}:@0)",
            f"{then}:@2 = @return({then}:@1)",
        ]
    else:
        lines += [f"{then}:@0 = neg(x)", f"{then}:@1 = @return({then}:@0)"]
    lines += ["", f'module: "{other}"', f"{other}:@0 = exp(x)", f"{other}:@1 = @return({other}:@0)", ""]
print("\n".join(lines))
