"""The SDK as a package: pip installs it from pyproject.toml with nothing else, it imports only the standard library,
its syntax is Python 3.9's, and a forked worker (gunicorn, uwsgi) gets threads and a cache of its own."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests.support import BASE_URL, KEYS, VERIFIER_TOKEN, LiveCase, usage_total, wait_until

SDK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = sorted(os.path.join(SDK_DIR, "tollgate", name) for name in os.listdir(os.path.join(SDK_DIR, "tollgate")) if name.endswith(".py"))


class PackageTest(unittest.TestCase):
    def test_pip_installs_it_with_no_dependency_and_it_verifies_keys_from_anywhere(self) -> None:
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work)
        # A copy: building writes build/ and *.egg-info beside the sources.
        source = os.path.join(work, "src")
        shutil.copytree(SDK_DIR, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
        target = os.path.join(work, "site")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "--target", target, source],
            check=True,
            capture_output=True,
        )
        self.assertEqual(sorted(name for name in os.listdir(target) if not name.endswith(".dist-info")), ["tollgate"])
        program = "import sys; from tollgate import Tollgate; t = Tollgate(sys.argv[1], sys.argv[2]); print(t.check(sys.argv[3]).reason); t.close()"
        out = subprocess.run(
            [sys.executable, "-c", program, BASE_URL, VERIFIER_TOKEN, KEYS["valid"]["key"]],
            cwd=work,
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": target, "PYTHONDONTWRITEBYTECODE": "1"},
            check=True,
            capture_output=True,
            text=True,
        )
        self.assertEqual(out.stdout.strip(), "VALID")

    def test_python_3_9_syntax_and_the_standard_library_only(self) -> None:
        stdlib = getattr(sys, "stdlib_module_names", None)
        for path in SOURCES:
            with open(path, encoding="utf-8") as file:
                tree = ast.parse(file.read(), path, feature_version=(3, 9))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if stdlib is not None:
                        self.assertIn(top, stdlib | {"__future__"}, f"{os.path.basename(path)} imports {name}")


class ForkTest(LiveCase):
    @unittest.skipUnless(hasattr(os, "fork"), "no fork on this platform")
    def test_a_forked_child_checks_and_reports_with_threads_of_its_own(self) -> None:
        client = self.client(report_interval=60)
        self.connected(client)
        key = KEYS["forked"]["key"]
        self.assertTrue(client.check(key).valid)  # counted by Tollgate
        client.check(key)  # one use counted here, the parent's to report
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: a pre-forking server's worker
            code = 1
            try:
                os.close(read)
                results = [client.check(key) for _ in range(3)]
                connected = wait_until(lambda: client.connected)
                client.close()  # reports the child's own uses, not the parent's
                os.write(write, f"{all(results)} {connected}".encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as pipe:
            said = pipe.read()
        _, status = os.waitpid(pid, 0)
        self.assertEqual((said, os.waitstatus_to_exitcode(status)), ("True True", 0))
        client.close()
        # 2 in the parent (1 by Tollgate, 1 reported) + 3 in the child (the first asks Tollgate again: its cache is new).
        self.assertEqual(usage_total("forked"), 5)

