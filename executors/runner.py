"""orkwal's Python task runner, embedded in the orkwal binary.

Usage: python3 runner.py SPEC_JSON

SPEC_JSON (written by the python executor) names the task:
  {"file": "/abs/tasks.py"} or {"module": "pkg.tasks", "sys_path": ["/wf"]}
  or {"library": "/abs/libtask.so"} (Ork's library executor, see run_library),
  "function": "main", "error_file": "/scratch/error.txt",
  "types": {"input": node|null, "output": node|null, "types": {name: node}},
  "check_types": true|false
where a node is a compiled type expression (python_types.go):
  {"kind": ..., "name": ..., "of": node, "fields": {name: node}, "ref": name}.

The runner reads the task's input document from $ORKWAL_INPUT, takes its
"inputs" object, checks it, imports the file or module, calls the function
with the inputs as Ork does (see call_arguments), checks the return value
(a type mismatch fails the task with check_types, and is otherwise a
warning line on stderr) and writes it JSON-encoded to $ORKWAL_OUTPUT
(datetime, date and time as ISO 8601). A None return writes nothing.

On failure it exits 1 after writing one line (the exception's
"Type: message", or the runner's own reason) to error_file; an exception's
traceback goes to stderr. Only the standard library is used, and nothing
newer than Python 3.8.
"""

import dataclasses
import datetime
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import traceback
import typing


RUNNER_FILE = sys._getframe().f_code.co_filename  # this file, or "<string>" with -c


class TaskError(Exception):
    """A failure the runner detected; its message is the task's error."""


def main(argv):
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # print() lines reach the log at once
    if len(argv) != 2:
        print("usage: runner.py SPEC_JSON", file=sys.stderr)
        return 2
    try:
        spec = read_json(argv[1], "runner spec")
    except TaskError as err:
        print("orkwal: %s" % err, file=sys.stderr)
        return 2
    try:
        run(spec)
    except TaskError as err:
        return fail(spec, str(err))
    except Exception as err:  # the task's own exception
        sys.stdout.flush()
        traceback.print_exception(type(err), err, task_frames(err.__traceback__))
        return fail(spec, exception_line(err), quiet=True)
    return 0


def task_frames(tb):
    """tb without the runner's own frames at its top, unless the error is
    the runner's (e.g. calling the function with wrong arguments)."""
    first = tb
    while tb is not None and tb.tb_frame.f_code.co_filename == RUNNER_FILE:
        tb = tb.tb_next
    return tb or first


def run(spec):
    """Checks the inputs, calls the function and writes its result."""
    types = spec.get("types") or {}
    named = types.get("types") or {}
    strict = spec.get("check_types")
    inputs = read_inputs()
    if types.get("input"):
        checked(strict, check_inputs, types["input"], inputs, named)
    if spec.get("library"):
        result = run_library(spec["library"], inputs)
    else:
        fn = find_function(spec)
        args, kwargs = call_arguments(fn, inputs)
        result = fn(*args, **kwargs)
    value = jsonable(result, [])
    if types.get("output"):
        checked(strict, check, types["output"], value, [], named, "output")
    if value is not None:
        write_output(value)


def checked(strict, check_fn, *args):
    """Runs a type check: a mismatch fails the task with check_types, and
    is otherwise a warning line in the task's log."""
    try:
        check_fn(*args)
    except Mismatch as err:
        if strict:
            raise
        sys.stdout.flush()
        print("orkwal: warning: %s (types are enforced only with check_types: true)" % err, file=sys.stderr)


def fail(spec, message, quiet=False):
    """Reports message as the task's error and returns the exit status."""
    if not quiet:
        sys.stdout.flush()
        print("orkwal: %s" % message, file=sys.stderr)
    path = spec.get("error_file")
    if path:
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(message)
        except OSError as err:
            print("orkwal: write %s: %s" % (path, err), file=sys.stderr)
    return 1


def exception_line(err):
    """The last line Python's traceback would print, e.g. "ValueError: bad row"."""
    cls = type(err)
    name = cls.__qualname__
    if cls.__module__ not in ("builtins", "__main__"):
        name = cls.__module__ + "." + name
    try:
        message = str(err)
    except Exception:
        message = "<unprintable %s>" % name
    return "%s: %s" % (name, message) if message else name


# ---- input, output, import ----


def read_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as err:
        raise TaskError("read %s %s: %s" % (what, path, err))


def read_inputs():
    """The "inputs" object of the input document: the keyword arguments."""
    path = os.environ.get("ORKWAL_INPUT")
    if not path:
        raise TaskError("ORKWAL_INPUT is not set")
    doc = read_json(path, "input")
    inputs = doc.get("inputs") if isinstance(doc, dict) else None
    if inputs is None:
        return {}
    if not isinstance(inputs, dict):
        raise TaskError("inputs: expected an object, got %s" % describe(inputs, "dict"))
    return inputs


def write_output(value):
    path = os.environ.get("ORKWAL_OUTPUT")
    if not path:
        raise TaskError("ORKWAL_OUTPUT is not set")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as err:
        raise TaskError("output is not JSON: %s" % err)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def run_library(path, inputs):
    """Calls Ork's C ABI of a shared library: ork_task_run(inputs as JSON)
    returns the output as JSON text (after an optional "ORK_OUTPUT:"),
    which ork_task_free releases. A crash inside ends this process only."""
    import ctypes

    try:
        lib = ctypes.CDLL(path)
    except OSError as err:
        raise TaskError("load library %s: %s" % (path, err))
    for name in ("ork_task_run", "ork_task_free"):
        if not hasattr(lib, name):
            raise TaskError("library %s does not export %s" % (path, name))
    run, free = lib.ork_task_run, lib.ork_task_free
    run.argtypes, run.restype = [ctypes.c_char_p], ctypes.c_void_p
    free.argtypes, free.restype = [ctypes.c_void_p], None
    sys.stdout.flush()
    ptr = run(json.dumps(inputs, separators=(",", ":")).encode("utf-8"))
    if not ptr:
        raise TaskError("ork_task_run of %s returned NULL" % path)
    try:
        raw = ctypes.string_at(ptr)
    finally:
        free(ptr)
    text = raw.decode("utf-8", errors="replace").strip()
    if text.startswith("ORK_OUTPUT:"):
        text = text[len("ORK_OUTPUT:"):].strip()
    try:
        return json.loads(text)
    except ValueError as err:
        raise TaskError("ork_task_run of %s returned no JSON (%s): %.200s" % (path, err, text))


def call_arguments(fn, inputs):
    """The arguments of fn, Ork's way: the inputs its parameters name, as
    keywords; a function of one parameter that no input names gets them
    all as one value, Annotation(**inputs) (a pydantic model, a dataclass)
    or, without an annotation or when that fails, the dict. A function
    with **kwargs gets every input."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read: a builtin
        return [], dict(inputs)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return [], dict(inputs)
    if len(params) == 1 and params[0].name not in inputs and params[0].kind != params[0].VAR_POSITIONAL:
        return [model_argument(fn, params[0], inputs)], {}
    return [], {p.name: inputs[p.name] for p in params if p.name in inputs}


def model_argument(fn, param, inputs):
    """The inputs as the one parameter's annotation, else as the dict."""
    ann = param.annotation
    if isinstance(ann, str):  # from __future__ import annotations
        try:
            ann = typing.get_type_hints(fn).get(param.name, inspect.Parameter.empty)
        except Exception:
            return dict(inputs)
    if ann is inspect.Parameter.empty:
        return dict(inputs)
    try:
        return ann(**inputs)
    except Exception:
        return dict(inputs)


# ---- ork_sdk, for tasks written for Ork with its SDK not installed ----

# ORK_SDK is orkwal's own small ork_sdk module: the deferrable job
# descriptors of Ork's python SDK (github.com/gajop/ork, python-sdk), whose
# to_dict() gives the JSON that orkwal's scheduler tracks (README, Deferred
# jobs). It is only found when no ork_sdk is installed: its finder comes
# last in sys.meta_path.
ORK_SDK = r"""
import dataclasses as _dc
import json as _json
import typing as _t


class Deferrable:
    # A long-running job the scheduler tracks once the task returns
    # {"deferred": [job.to_dict(), ...]}.

    SERVICE = ""
    ID_FIELDS = ()

    def service_type(self):
        return self.SERVICE

    def tracking_id(self):
        return "/".join(str(getattr(self, f)) for f in self.ID_FIELDS)

    def to_dict(self):
        out = _dc.asdict(self)
        out["service_type"] = self.service_type()
        out.setdefault("job_id", self.tracking_id())
        return out

    def to_json(self):
        return _json.dumps(self.to_dict())


@_dc.dataclass
class BigQueryJob(Deferrable):
    project: str
    job_id: str
    location: str
    SERVICE = "bigquery"
    ID_FIELDS = ("project", "location", "job_id")


@_dc.dataclass
class CloudRunJob(Deferrable):
    project: str
    region: str
    job_name: str
    execution_id: str
    SERVICE = "cloudrun"
    ID_FIELDS = ("project", "region", "job_name", "execution_id")


@_dc.dataclass
class DataprocJob(Deferrable):
    project: str
    region: str
    cluster_name: str
    job_id: str
    SERVICE = "dataproc"
    ID_FIELDS = ("project", "region", "cluster_name", "job_id")


@_dc.dataclass
class CustomHttp(Deferrable):
    url: str
    method: str = "GET"
    headers: _t.Dict[str, str] = _dc.field(default_factory=dict)
    success_status_codes: _t.List[int] = _dc.field(default_factory=lambda: [200])
    completion_field: str = "status"
    completion_value: str = "completed"
    failure_value: _t.Optional[str] = None
    SERVICE = "custom_http"
    ID_FIELDS = ("url",)

    def to_dict(self):
        out = Deferrable.to_dict(self)  # the tracker's names for two fields
        out["status_field"] = out.pop("completion_field")
        out["success_value"] = out.pop("completion_value")
        return out


__all__ = ["BigQueryJob", "CloudRunJob", "DataprocJob", "CustomHttp", "Deferrable"]
"""


class OrkSdkFinder:
    """Finds orkwal's ork_sdk (ORK_SDK) when no other finder has one."""

    def find_spec(self, name, path=None, target=None):
        if name != "ork_sdk":
            return None
        return importlib.util.spec_from_loader(name, self, origin="orkwal's ork_sdk")

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(ORK_SDK, "<orkwal ork_sdk>", "exec"), module.__dict__)


def find_function(spec):
    """Imports the task's file or module and returns its function."""
    name = spec.get("function") or "main"
    module, where = import_task(spec)
    fn = getattr(module, name, None)
    if fn is None:
        raise TaskError("function %r not found in %s" % (name, where))
    if not callable(fn):
        raise TaskError("%r in %s is not a function" % (name, where))
    return fn


def import_task(spec):
    """Returns the task's module and how messages name it."""
    if sys.path and is_runner_dir(sys.path[0]):
        del sys.path[0]  # the runner's own folder (or, with -c, the cwd)
    sys.meta_path.append(OrkSdkFinder())  # last: an installed ork_sdk wins
    path, module = spec.get("file"), spec.get("module")
    if path:
        sys.path.insert(0, os.path.dirname(path))  # as `python3 file.py` does
        return import_file(path), path
    if not module:
        raise TaskError("neither file nor module is set")
    sys.path[0:0] = spec.get("sys_path") or []
    try:
        return importlib.import_module(module), "module %s" % module
    except TaskError:
        raise
    except Exception as err:
        print_import_error(err)
        raise TaskError("import module %s: %s" % (module, exception_line(err)))


def is_runner_dir(entry):
    if RUNNER_FILE == "<string>":
        return entry == ""
    own = os.path.dirname(RUNNER_FILE)
    return os.path.realpath(entry or ".") == os.path.realpath(own or ".")


def import_file(path):
    if not os.path.isfile(path):
        raise TaskError("python file not found: %s" % path)
    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskError("cannot load %s as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickle look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        print_import_error(err)
        raise TaskError("import %s: %s" % (path, exception_line(err)))
    return module


def print_import_error(err):
    sys.stdout.flush()
    traceback.print_exception(type(err), err, err.__traceback__)


def module_name(path):
    """The file's stem, unless it would shadow a module already loaded."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem.isidentifier() and stem not in sys.modules:
        return stem
    return "orkwal_task"


# ---- JSON encoding ----


def jsonable(value, path):
    """value with datetimes as ISO 8601 strings and tuples as lists; raises
    TaskError naming the place of a value JSON cannot hold."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TaskError("%s: %r is not a JSON number" % (label("output", path), value))
        return value
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {json_key(k, path): jsonable(v, path + [str(k)]) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, path + [i]) for i, v in enumerate(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value), path)
    if hasattr(value, "model_dump"):  # a pydantic model, as Ork accepts
        return jsonable(value.model_dump(), path)
    raise TaskError(
        "%s: a %s is not JSON (return dict, list, str, int, float, bool, None, datetime or date)"
        % (label("output", path), type(value).__name__)
    )


def json_key(key, path):
    if isinstance(key, str):
        return key
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key)
    raise TaskError(
        "%s: a dict key of type %s is not JSON (keys are strings)"
        % (label("output", path), type(key).__name__)
    )


# ---- type checking ----


class Mismatch(TaskError):
    pass


def check_inputs(node, inputs, named):
    """Checks the keyword arguments against input_type (an object)."""
    fields = resolve(node, named).get("fields") or {}  # {} has no fields
    for key in inputs:
        if key not in fields:
            raise Mismatch('input "%s": not declared in input_type' % key)
    check(node, inputs, [], named, "input")


def check(node, value, path, named, prefix, shown=None):
    """Raises Mismatch unless value has the type node."""
    shown = shown or node["name"]
    kind = node["kind"]
    if kind == "named":
        return check(named[node["ref"]], value, path, named, prefix, shown)
    if kind == "optional":
        if value is not None:
            check(node["of"], value, path, named, prefix, shown)
        return
    if not matches(kind, value):
        raise Mismatch("%s: expected %s, got %s" % (label(prefix, path), shown, describe(value, kind)))
    if kind == "list" and node.get("of"):
        for i, item in enumerate(value):
            check(node["of"], item, path + [i], named, prefix)
    if kind == "object":
        check_fields(node, value, path, named, prefix)


def check_fields(node, value, path, named, prefix):
    for name, field in sorted((node.get("fields") or {}).items()):
        if name in value:
            check(field, value[name], path + [name], named, prefix)
        elif resolve(field, named)["kind"] not in ("optional", "any"):
            raise Mismatch("%s: missing, expected %s" % (label(prefix, path + [name]), field["name"]))


def matches(kind, value):
    """Whether value is of kind, not looking inside lists and objects."""
    if kind == "any":
        return True
    if kind in ("object", "dict"):
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "datetime":
        return temporal(value) in ("datetime", "datetime_utc")
    if kind in ("date", "datetime_utc", "datetime_notz"):
        return temporal(value) == kind
    raise TaskError("unknown type kind %r" % kind)


def resolve(node, named):
    while node["kind"] == "named":
        node = named[node["ref"]]
    return node


TEMPORAL = ("date", "datetime", "datetime_utc", "datetime_notz")


def temporal(value):
    """Which ISO 8601 form the string value is in: date, datetime (with a
    time zone), datetime_utc (zero offset), datetime_notz, or None."""
    if not isinstance(value, str):
        return None
    if len(value) == 10:
        try:
            datetime.date.fromisoformat(value)
            return "date"
        except ValueError:
            return None
    if len(value) < 16 or value[10] not in "Tt ":
        return None
    text = value[:-1] + "+00:00" if value[-1] in "Zz" else value  # Python < 3.11
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    offset = parsed.utcoffset()
    if offset is None:
        return "datetime_notz"
    return "datetime_utc" if offset == datetime.timedelta(0) else "datetime"


def describe(value, expected_kind):
    """The type of a JSON value, as messages name it."""
    if value is None:
        return "None"
    if isinstance(value, str) and expected_kind in TEMPORAL:
        return temporal(value) or "str"
    for cls, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (list, "list"), (dict, "dict")):
        if isinstance(value, cls):
            return name
    return type(value).__name__


def label(prefix, path):
    """'input "row.tags[2]"', or the bare prefix for the whole value."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += "[%d]" % part
        else:
            text += ("." if text else "") + part
    return '%s "%s"' % (prefix, text) if text else prefix


if __name__ == "__main__":
    sys.exit(main(sys.argv))
