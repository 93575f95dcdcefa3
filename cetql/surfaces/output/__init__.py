"""Writing results without destroying anything: every writer (`cetql run
--output`, `cetql gen`, `cetql draw -o`, the REPL's `:save`) goes through
here — `paths.resolve_output` (what may be written, refused before any
work), `staging.staged` (written beside, moved into place without
replacing anything), `writers` (DataFrames, Arrow batches, one file)."""

from cetql.surfaces.output.paths import resolve_output
from cetql.surfaces.output.shapes import check_append_shape, existing_shape
from cetql.surfaces.output.staging import Terminated, recover, rename_noreplace, staged, staging_path
from cetql.surfaces.output.target import FILE, FOLDER, Target
from cetql.surfaces.output.writers import (
    check_append,
    count_rows,
    prepare_for_format,
    write,
    write_batches,
    write_file,
    write_result,
    write_text_batches,
)

__all__ = ["FILE", "FOLDER", "Target", "Terminated", "check_append", "check_append_shape", "count_rows", "existing_shape",
           "prepare_for_format", "recover", "rename_noreplace", "resolve_output", "staged", "staging_path", "write",
           "write_batches", "write_file", "write_result", "write_text_batches"]  # fmt: skip
