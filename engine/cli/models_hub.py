"""`logitscope models --search/--download/--set/--add-folder`: the hub and the
remembered choices, apart from the listing itself (models.py)."""

from __future__ import annotations

import json


def hub_command(args) -> int | None:
    """Run the option given, if any; its exit status, or None for the plain listing."""
    if args.search is not None:
        return _search(args)
    if args.download:
        return _download(args)
    if args.set:
        return _set(args)
    if args.add_folder:
        from engine.models.model_prefs import set_user_folders, user_folders

        set_user_folders([*user_folders(), args.add_folder])
        print(f"{args.add_folder} will be scanned for models")
        return 0
    return None


def _search(args) -> int:
    from dataclasses import asdict

    from engine.models.hub import search
    from engine.models.memory_fit import memory_fit

    found = search(args.search)
    if args.json:
        print(json.dumps([asdict(m) for m in found], indent=2))
        return 0
    for m in found:
        size = f"{m.size_bytes / 1e9:.2f} GB" if m.size_bytes else "size ?"
        fit = memory_fit(m.size_bytes).text() if m.size_bytes else ""
        params = f"{m.parameters / 1e6:,.0f} M params · " if m.parameters else ""
        print(
            f"{m.repo_id}  [{m.format} {m.quantization}]  {params}{size} · "
            f"{m.downloads:,} downloads · licence {m.license or '?'}  {fit}"
        )
    if not found:
        print(f"nothing on the hub matches '{args.search}'")
    return 0


def _download(args) -> int:
    from engine.cli.progress import ProgressDisplay
    from engine.models.hub import download

    bar = ProgressDisplay(plain=args.json)
    try:
        path = download(
            args.download,
            args.file,
            lambda e: (
                bar(f"Downloading {e.file}", e.done_bytes / e.total_bytes)
                if e.total_bytes
                else None
            ),
        )
    finally:
        bar.close()
    print(path)
    return 0


def _set(args) -> int:
    from engine.models.load_options import LoadOptions
    from engine.models.model_prefs import set_load_options

    mode = "rotating" if args.rotating else "capped"
    options = LoadOptions(args.context, args.kv_bits, mode)
    set_load_options(args.set, options)
    print(f"{args.set}: {options.label()}")
    return 0
