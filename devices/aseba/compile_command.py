"""`hwgateway aseba compile FILE.aesl --description DESC.json`: compile and print a listing."""

from __future__ import annotations

import argparse
from pathlib import Path

#: Exit status when the script or the description is wrong.
EXIT_COMPILE_ERROR = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the `aseba compile` subcommand."""
    parser.add_argument("file", help=".aesl file to compile")
    parser.add_argument(
        "--description",
        required=True,
        help="the node's description: JSON list of [message type, hex payload] description frames",
    )
    parser.add_argument("--node-id", type=int, default=1, help="node id used to pick the program (default 1)")


def run(args: argparse.Namespace) -> tuple[int, str]:
    """Compile; return the exit status and the text to print (listing, or the error)."""
    # Here, not at the top: building `hwgateway`'s parser must not pay for importing the compiler.
    from protocols.aseba.compiler import CompileError, compile_script, listing, parse_aesl
    from protocols.aseba.compiler.description_file import load_description
    from protocols.errors import ProtocolError

    try:
        description = load_description(Path(args.description).read_text(encoding="utf-8"))
        aesl = parse_aesl(Path(args.file).read_text(encoding="utf-8"))
        program = aesl.program_for(description.name, args.node_id)
    except (ProtocolError, OSError, UnicodeDecodeError) as error:
        return EXIT_COMPILE_ERROR, f"{args.file}: {error}"
    try:
        compiled = compile_script(program.source, description, aesl.events, aesl.constants)
    except CompileError as error:
        located = program.locate(error)  # lines of the .aesl file, not of the node's program
        return EXIT_COMPILE_ERROR, f"{args.file}:{located.line}:{located.column}: {located.message}"
    except (ProtocolError, OSError, UnicodeDecodeError) as error:
        return EXIT_COMPILE_ERROR, f"{args.file}: {error}"
    lines = [f"; {args.file} for {description.name}: {len(compiled.bytecode)} words"]
    lines += [f"; var {v.name} @{v.address} [{v.size}]" for v in compiled.variables.values()]
    lines += [f"; event {i} {e.name} [{e.size}]" for i, e in enumerate(compiled.events)]
    lines += listing(compiled.bytecode)
    lines.append("; words: " + " ".join(f"{w:04x}" for w in compiled.bytecode))
    return 0, "\n".join(lines)
