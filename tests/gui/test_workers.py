"""Background tasks: a running task is never destroyed under the GUI's feet."""

import subprocess
import sys
import textwrap
from tests.gui.conftest import WORK_SECONDS


def test_a_running_task_that_nobody_holds_survives_the_garbage_collector():
    # In a child process: destroying a running QThread aborts the whole process, which in the suite
    # happened when the garbage collector took a dialog (and its task) while the export still ran.
    script = textwrap.dedent("""
        import gc, os, threading
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from PySide6.QtCore import QCoreApplication, QTimer
        from dpdesk.gui.workers import Task

        app = QCoreApplication([])
        release = threading.Event()
        outcome = []

        def work(progress, cancel):
            release.wait(10)
            return 42

        def start():
            task = Task(work)  # no parent, and dropped at once: only the task itself keeps it alive
            task.succeeded.connect(outcome.append)
            task.finished.connect(app.quit)
            task.start()

        start()
        gc.collect()  # would destroy the running QThread
        release.set()
        QTimer.singleShot(20_000, app.quit)
        app.exec()
        assert outcome == [42], outcome
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WORK_SECONDS)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])


def test_the_app_collects_garbage_in_the_gui_thread_only():
    script = textwrap.dedent("""
        import gc, os
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        assert gc.isenabled()
        from dpdesk.gui.app import make_app

        app = make_app()
        assert not gc.isenabled(), "a worker thread could start a collection"
        assert app._dpdesk_garbage_collector.timer.isActive()
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WORK_SECONDS)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
