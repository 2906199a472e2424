#!/usr/bin/env python3
"""The public API of a crate, one line per item, from rustdoc's JSON output.

Usage: public_api.py CRATE.json            the listing, sorted, on stdout
       public_api.py CRATE.json --counts   the counts the listing's header states

Walks the crate from its root module through public modules and re-exports, as a user
reaches it: every path to a module, type, trait, function, constant or macro; for each type
and trait (at its first path) its public fields, variants, methods, associated items and
the traits it implements. Auto traits and blanket impls are left out (they follow from the
rest). Functions are listed with their parameters and return type, without bounds.
"""

import json
import sys

KNOWN_FORMATS = range(50, 80)

TYPE_KINDS = ("struct", "enum", "union", "type_alias")


def kind_of(item):
    inner = item["inner"]
    return next(iter(inner)) if isinstance(inner, dict) else inner


def render_args(args):
    if not args:
        return ""
    if "angle_bracketed" in args:
        parts = []
        for a in args["angle_bracketed"]["args"]:
            if "lifetime" in a:
                parts.append(a["lifetime"])
            elif "type" in a:
                parts.append(ty(a["type"]))
            elif "const" in a:
                parts.append(a["const"].get("expr", "_"))
            else:
                parts.append("_")
        for c in args["angle_bracketed"].get("constraints", []):
            binding = c.get("binding", {})
            if "equality" in binding and "type" in binding["equality"]:
                parts.append(f"{c['name']} = {ty(binding['equality']['type'])}")
            else:
                parts.append(c["name"])
        return "<" + ", ".join(parts) + ">" if parts else ""
    if "parenthesized" in args:
        p = args["parenthesized"]
        out = "(" + ", ".join(ty(t) for t in p["inputs"]) + ")"
        if p.get("output"):
            out += " -> " + ty(p["output"])
        return out
    return ""


def short(path):
    return path.split("::")[-1]


def bound(b):
    if "trait_bound" in b:
        t = b["trait_bound"]["trait"]
        return short(t["path"]) + render_args(t.get("args"))
    if "outlives" in b:
        return b["outlives"]
    return "?"


def ty(t):
    if t is None:
        return "()"
    if isinstance(t, str):
        return "_" if t == "infer" else t
    k, v = next(iter(t.items()))
    if k == "resolved_path":
        return short(v["path"]) + render_args(v.get("args"))
    if k == "primitive" or k == "generic":
        return v
    if k == "borrowed_ref":
        lt = (v["lifetime"] + " ") if v.get("lifetime") else ""
        return "&" + lt + ("mut " if v["is_mutable"] else "") + ty(v["type"])
    if k == "raw_pointer":
        return ("*mut " if v["is_mutable"] else "*const ") + ty(v["type"])
    if k == "tuple":
        return "(" + ", ".join(ty(x) for x in v) + ")"
    if k == "slice":
        return "[" + ty(v) + "]"
    if k == "array":
        return "[" + ty(v["type"]) + "; " + str(v["len"]) + "]"
    if k == "impl_trait":
        return "impl " + " + ".join(bound(b) for b in v)
    if k == "dyn_trait":
        return "dyn " + " + ".join(
            short(p["trait"]["path"]) + render_args(p["trait"].get("args")) for p in v["traits"]
        )
    if k == "qualified_path":
        return ty(v["self_type"]) + "::" + v["name"]
    if k == "function_pointer":
        sig = v["sig"]
        return "fn(" + ", ".join(ty(x[1]) for x in sig["inputs"]) + ")" + (
            " -> " + ty(sig["output"]) if sig.get("output") else ""
        )
    return k


def signature(item, path):
    f = item["inner"]["function"]
    sig = f["sig"]
    params = []
    for name, t in sig["inputs"]:
        if name == "self":
            if t == {"generic": "Self"}:
                params.append("self")
            elif "borrowed_ref" in t and t["borrowed_ref"]["type"] == {"generic": "Self"}:
                params.append("&mut self" if t["borrowed_ref"]["is_mutable"] else "&self")
            else:
                params.append("self: " + ty(t))
        else:
            params.append(f"{name}: {ty(t)}")
    header = f["header"]
    prefix = ("const " if header.get("is_const") else "") + ("async " if header.get("is_async") else "")
    out = f"{prefix}fn {path}::{item['name']}(" + ", ".join(params) + ")"
    if sig.get("output"):
        out += " -> " + ty(sig["output"])
    return out


def main():
    data = json.load(open(sys.argv[1]))
    if data["format_version"] not in KNOWN_FORMATS:
        sys.exit(f"rustdoc JSON format {data['format_version']} is not one this script reads")
    index = data["index"]
    get = lambda i: index.get(str(i))
    root = get(data["root"])
    crate = root["name"]
    lines = set()
    seen_at = {}  # type or trait id -> its paths (members are listed at the shortest only)
    counts = {"root items": 0, "root modules": 0, "types": set(), "traits": set(), "functions": set()}

    def public(item):
        return item is not None and item["visibility"] in ("public", "default")

    def children(module):
        """The public items of a module: (id, item, name as the module exports it)."""
        for child in module["inner"]["module"]["items"]:
            child_item = get(child)
            if not public(child_item):
                continue
            name = child_item["name"] or child_item["inner"].get("use", {}).get("name")
            if name is not None:
                yield child, child_item, name

    def members(item_id, path):
        item = get(item_id)
        kind = kind_of(item)
        inner = item["inner"][kind]
        if kind in ("struct", "union"):
            skind = inner["kind"]
            fields = []
            if isinstance(skind, dict) and "plain" in skind:
                fields = skind["plain"]["fields"]
            elif isinstance(skind, dict) and "tuple" in skind:
                fields = [f for f in skind["tuple"] if f is not None]
            for fid in fields:
                field = get(fid)
                if public(field):
                    lines.add(f"field {path}.{field['name']}: {ty(field['inner']['struct_field'])}")
        if kind == "enum":
            for vid in inner["variants"]:
                lines.add(f"variant {path}::{get(vid)['name']}")
        if kind == "trait":
            for iid in inner["items"]:
                member(get(iid), path, iid)
        for impl_id in inner.get("impls", []):
            impl = get(impl_id)
            if impl is None:
                continue
            imp = impl["inner"]["impl"]
            if imp["is_synthetic"] or imp["blanket_impl"] is not None:
                continue
            if imp["trait"] is None:
                for iid in imp["items"]:
                    it = get(iid)
                    if public(it):
                        member(it, path, iid)
            else:
                t = imp["trait"]
                lines.add(f"impl {short(t['path'])}{render_args(t.get('args'))} for {ty(imp['for'])}")

    def member(it, path, iid):
        if it is None:
            return
        kind = kind_of(it)
        if kind == "function":
            counts["functions"].add(iid)
            lines.add(signature(it, path))
        elif kind == "assoc_const":
            lines.add(f"const {path}::{it['name']}: {ty(it['inner']['assoc_const']['type'])}")
        elif kind == "assoc_type":
            lines.add(f"type {path}::{it['name']}")

    def visit(item_id, path, depth):
        item = get(item_id)
        if item is None or depth > 12:
            return
        kind = kind_of(item)
        if kind == "use":
            use = item["inner"]["use"]
            target = use["id"]
            if target is None:
                lines.add(f"use {path} (external)")
                return
            if use["is_glob"]:
                for child in get(target)["inner"]["module"]["items"]:
                    child_item = get(child)
                    if public(child_item) and child_item.get("name"):
                        visit(child, path.rsplit("::", 1)[0] + "::" + child_item["name"], depth + 1)
                return
            if get(target) is None:  # an item of another crate re-exported
                lines.add(f"use {path} (external)")
                return
            visit(target, path, depth + 1)
            return
        if kind == "module":
            lines.add(f"mod {path}")
            for child, child_item, name in children(item):
                visit(child, f"{path}::{name}", depth + 1)
            return
        if kind in ("impl", "variant", "struct_field"):
            return
        label = {"type_alias": "type", "function": "fn", "constant": "const", "static": "static"}.get(kind, kind)
        if kind == "function":
            counts["functions"].add(item_id)
            lines.add(signature(item, path.rsplit("::", 1)[0]))
        else:
            lines.add(f"{label} {path}")
        if kind in TYPE_KINDS:
            counts["types"].add(item_id)
        if kind == "trait":
            counts["traits"].add(item_id)
        if kind in TYPE_KINDS[:3] or kind == "trait":
            seen_at.setdefault(item_id, []).append(path)

    for child, child_item, name in children(root):
        target = child_item
        if kind_of(child_item) == "use" and child_item["inner"]["use"]["id"] is not None:
            target = get(child_item["inner"]["use"]["id"]) or child_item
        if kind_of(target) == "module":
            counts["root modules"] += 1
        else:
            counts["root items"] += 1
        visit(child, f"{crate}::{name}", 0)

    for item_id, paths in seen_at.items():
        members(item_id, min(paths, key=lambda p: (p.count("::"), p)))

    summary = {
        "root items (not modules)": counts["root items"],
        "root modules": counts["root modules"],
        "public types (structs, enums, unions, aliases)": len(counts["types"]),
        "public traits": len(counts["traits"]),
        "public functions and methods": len(counts["functions"]),
        "lines": len(lines),
    }
    if "--counts" in sys.argv:
        for k, v in summary.items():
            print(f"{k}: {v}")
        return
    for line in sorted(lines):
        print(line)


if __name__ == "__main__":
    main()
