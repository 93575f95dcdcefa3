"""`cetql repl`'s loop: the prompt (prompt_toolkit on a terminal, with
completion and history), entries read from a pipe, and the command line."""

from __future__ import annotations

import re
import sys

from cetql.base.options import RunOptions
from cetql.surfaces.arguments import parse_inputs, parse_params
from cetql.surfaces.repl.shell import Shell, history_path, is_complete


def _prompt_session(shell: Shell):
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    class Words(Completer):
        def get_completions(self, document, _complete_event):
            before = document.text_before_cursor
            word = re.search(r"[A-Za-z0-9_:-]*$", before).group(0).split(".")[-1]
            for w in shell.words(before):
                yield Completion(w, start_position=-len(word))

    keys = KeyBindings()

    @keys.add("enter")
    def _(event):
        buffer = event.current_buffer
        if is_complete(buffer.text + ("\n" if buffer.document.current_line == "" else "")):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    path = history_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return PromptSession(
        message="cetql> ",
        multiline=True,
        prompt_continuation="  ...> ",
        key_bindings=keys,
        history=FileHistory(str(path)),
        completer=Words(),
        complete_while_typing=False,
    )


def _entries_from(stream):
    """Entries from piped lines: the same rules as the prompt."""
    buffer = ""
    for line in stream:
        if not buffer and line.strip().startswith(":"):
            yield line.strip()
            continue
        if not line.strip():
            if buffer.strip():
                yield buffer
            buffer = ""
            continue
        buffer += line
        if buffer.rstrip().endswith(";"):
            yield buffer
            buffer = ""
    if buffer.strip():
        yield buffer


def loop(shell: Shell, interactive: bool) -> int:
    shell.say("cetql repl — a query ends with ';' or a blank line; :help for commands, :quit to leave")
    if not interactive:
        for entry in _entries_from(sys.stdin):
            if not shell.handle(entry):
                break
        return 0
    session = _prompt_session(shell)
    while True:
        try:
            entry = session.prompt()
        except KeyboardInterrupt:
            continue  # Ctrl-C at the prompt clears the line
        except EOFError:
            break
        try:
            if not shell.handle(entry):
                break
        except KeyboardInterrupt:  # a second Ctrl-C while the first one's cancel runs: the shell stays
            shell.cancel()
            shell.complain("cancelled")
    return 0


def cmd_repl(args) -> int:
    options = RunOptions.of(time_col=args.time_col, id_col=args.id_col)
    data, typed = parse_inputs(args.input)
    shell = Shell(master=args.master, remote=args.remote, options=options, data=data, typed=typed,
                  params=parse_params(args.param))  # fmt: skip
    known = shell._known()
    if known is not None and known.schema is not None:
        shell._columns = tuple(known.schema.names())
    shell.start()
    return loop(shell, interactive=sys.stdin.isatty() and sys.stdout.isatty())
