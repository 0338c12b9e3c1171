#!/usr/bin/env bash
# Inside the Wine chroot (packaging/check-windows.sh runs it; not a command of its own): sets up
# a clean Wine prefix, unpacks the Windows zip into it and runs each step of the check with one
# wineserver for all of them. Every step's output and exit status go to /mnt/host/results/; the
# judging is done by check-windows.sh on the Linux side.
set -uo pipefail
host=/mnt/host
results="$host/results"
export WINEPREFIX="$host/prefix" WINEDEBUG=-all HOME="$host/home" XDG_RUNTIME_DIR="$host/xdg" LANG=C.UTF-8
mkdir -p "$results" "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
for variable in $(env | sed -n 's/^\(PIP_[A-Z_]*\)=.*/\1/p'); do unset "$variable"; done

# one wineserver for every step (each Wine start then costs a second, not tens of them), kept up
# by a program that waits until the end (the services alone may stop, and two programs started
# at once with no server running can hang); its process id is noted before and after
server_pids() {
  for process in /proc/[0-9]*; do
    { tr '\0' ' ' < "$process/cmdline"; } 2>/dev/null | grep -q '^/usr/lib/wine/wineserver' && basename "$process"
  done | tr '\n' ' '
}
wineboot -i > "$results/wineboot.log" 2>&1
# no Z: (the whole Linux root, where /proc and Linux paths would hide what Windows lacks): the
# data folder is the drive D: alone
rm -f "$WINEPREFIX/dosdevices/z:"
mkdir -p "$host/data/work"
ln -sfn "$host/data" "$WINEPREFIX/dosdevices/d:"
unzip -q "$host/dpdesk.zip" -d "$WINEPREFIX/drive_c/"
app="$(cd "$WINEPREFIX/drive_c" && ls -d dpdesk-*-windows-x86_64)"
echo "$app" > "$results/app-folder"

# the two test-only shims Wine 10 needs (README: what they stand in for); never in the zip
shims="$host/shims"
x86_64-w64-mingw32-gcc-posix -O2 -shared -static -static-libgcc -o "$shims/wcomplex.dll" "$shims/wcomplex.c" &&
x86_64-w64-mingw32-gcc-posix -O2 -shared -static -static-libgcc -o "$shims/icuuc.dll" "$shims/icuuc.c" ||
  { echo "the shims did not build" > "$results/shims.out"; exit 1; }
cp "$shims/wcomplex.dll" "$shims/sitecustomize.py" "$WINEPREFIX/drive_c/$app/python/"
cp "$shims/icuuc.dll" "$WINEPREFIX/drive_c/windows/system32/"

cd "$WINEPREFIX/drive_c"   # a Linux working directory means nothing without Z:
dpdesk="C:\\$app\\dpdesk.cmd"
python="C:\\$app\\python\\python.exe"
true | wine "$python" -c "import time; time.sleep(86400)" > /dev/null 2>&1 &
keeper=$!
# wait until it runs: a step started meanwhile could start the server itself, which (with the
# services) would then hold that step's output pipe open, and the step would never end
for _ in $(seq 120); do
  for cmdline in /proc/[0-9]*/cmdline; do { tr '\0' ' ' < "$cmdline"; } 2>/dev/null; echo; done |
    grep -aq "^C:.*time.sleep(86400)" && break
  sleep 1
done
sleep 2
data='D:\work'
release_args="--mechanism lpa --bound 20 --items from-data --items-are-public"
STEP_SECONDS=900   # a step still running after 15 minutes is stuck (status 124)

# step NAME COMMAND-LINE: run COMMAND-LINE with Windows' cmd in D:\work; Python's standard
# streams must not be Wine's console (it loses output): stdin is a pipe from `true`, the output
# goes to a file (not a pipe: a Wine program that starts along the way, explorer.exe /desktop,
# stays and would hold a pipe open, so a reader would wait for ever)
step() {
  local name="$1"; shift
  true | timeout "$STEP_SECONDS" wine cmd /c "cd /d $data && $*" > "$results/$name.out" 2>&1
  echo "${PIPESTATUS[1]}" > "$results/$name.rc"
}

step version "$dpdesk --version"
server_pids > "$results/server-first"
step sample "$dpdesk sample ."
step inspect "$dpdesk inspect --json groceries.csv.gz"
step release "$dpdesk release groceries.csv.gz --epsilon 0.69 $release_args --formats csv,json,parquet --report html,pdf --out release"
step ledger-verify "$dpdesk ledger verify"

# two releases at once against one cap: the budget lock lets one through, refuses the other
# (the sample under other names: --override-dataset-check, recorded, as the same data is refused
# under a second name)
release_args="$release_args --override-dataset-check"
step cap "$dpdesk ledger cap capped 1 --reason check-windows-two-releases-against-one-cap"
pair=()
for n in 1 2; do
  ( true | timeout "$STEP_SECONDS" wine cmd /c "cd /d $data && $dpdesk release groceries.csv.gz --dataset capped --epsilon 0.69 $release_args --out concurrent-$n" \
      > "$results/concurrent-$n.out" 2>&1; echo "${PIPESTATUS[1]}" > "$results/concurrent-$n.rc" ) &
  pair+=($!)
done
wait "${pair[@]}"   # (not a bare wait: that would wait for the keeper too)
step capped-list "$dpdesk ledger list --dataset capped --json"

# dpdesk/locks.py's Windows branch (msvcrt.locking) between two processes: a second holder is
# refused while the first holds the lock, and gets it once it is released
cat > "$host/data/work/lockcheck.py" <<'PY'
import subprocess, sys
from dpdesk import locks
path = locks.lock_path("D:/work/locks", "one key")
other = ("from dpdesk import locks\n"
         "try:\n    locks.release(locks.acquire(sys.argv[1], blocking=False)); print('acquired')\n"
         "except locks.LockBusy:\n    print('busy')")
second = lambda: subprocess.run([sys.executable, "-c", "import sys\n" + other, str(path)], capture_output=True,
                                text=True).stdout.strip()
with locks.held(path):
    while_held = second()
after = second()
print("backend:", "msvcrt" if locks.fcntl is None else "fcntl", "| while held:", while_held, "| after release:", after)
PY
step lock "$python lockcheck.py"

# stdout to a file, as a script or a scheduled task would: Windows' code page is not UTF-8
step piped "$dpdesk release groceries.csv.gz --dataset piped --epsilon 0.5 $release_args --out piped > piped.txt 2> piped-err.txt"
step piped-list "$dpdesk ledger list --dataset piped --json"

# Windows file names: a reserved device name, a path longer than 260 characters, CR LF lines
step reserved "$dpdesk release groceries.csv.gz --dataset reserved --epsilon 0.5 $release_args --out NUL"
long="$(printf 'a-rather-long-folder-name-for-a-release-%02d\\' 1 2 3 4 5 6 7)"
step long-path "$dpdesk release groceries.csv.gz --dataset long --epsilon 0.5 $release_args --out ${long}release"
# (the last line has no line end: a "bread\r" kept from the others would be a fourth item)
printf 'person,item\r\n1,bread\r\n1,milk\r\n2,bread\r\n3,eggs\r\n4,bread' > "$host/data/work/crlf.csv"
step crlf "$dpdesk inspect --json crlf.csv"
step ledger-final "$dpdesk ledger verify"

# the desktop application's first screen, offscreen (no display under the chroot), as a picture
cat > "$host/data/work/screenshot.py" <<'PY'
import sys
sys.stdout.reconfigure(encoding="utf-8")
from dpdesk.data import load
from dpdesk.gui.app import make_app
from dpdesk.gui.main_window import MainWindow
from dpdesk.paths import sample_path
app = make_app()
window = MainWindow()
window.resize(1200, 780)
window.show()
data = load(sample_path())
window.state.set_dataset(data, {"path": str(sample_path()), "format": "transactions"})
for _ in range(20):
    app.processEvents()
picture = window.grab()
saved = picture.save(sys.argv[1])
image = picture.toImage()  # a drawn window has many colours, a blank one one or two
colours = {image.pixel(x, y) for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)}
print("window", repr(window.windowTitle()), window.width(), "x", window.height(), "saved:", saved,
      "colours:", len(colours))
window.close()
PY
true | QT_QPA_PLATFORM=offscreen timeout "$STEP_SECONDS" wine cmd /c "cd /d $data && $python screenshot.py D:\\work\\window.png" \
  > "$results/window.out" 2>&1
echo "${PIPESTATUS[1]}" > "$results/window.rc"

# the double-click launcher: dpdesk.exe must start python\pythonw.exe -m dpdesk gui with no
# console, its messages in %TEMP%\dpdesk-window.log (offscreen: no display here; stopped after)
( cd "$WINEPREFIX/drive_c/$app" && QT_QPA_PLATFORM=offscreen timeout 60 wine "C:\\$app\\dpdesk.exe" --sample \
    > "$results/launcher-wine.out" 2>&1 ) &
launcher=$!
running_gui() {   # the command lines of the processes running `pythonw.exe -m dpdesk gui` (no ps in minbase)
  for cmdline in /proc/[0-9]*/cmdline; do { tr '\0' ' ' < "$cmdline"; } 2>/dev/null; echo; done |
    grep -a "pythonw.exe" | grep -a -- "-m dpdesk gui"
}
for _ in $(seq 40); do
  sleep 1
  running_gui > "$results/launcher.out" && break
done
sleep 15   # the window would be up by now: a failure would have ended it with its message in the log
running_gui > "$results/launcher-alive.out"
cp "$WINEPREFIX/drive_c/users/"*/AppData/Local/Temp/dpdesk-window.log "$results/launcher-log.out" 2>/dev/null
kill "$launcher" 2>/dev/null

server_pids > "$results/server-last"
kill "$keeper" 2>/dev/null
wineserver -k
