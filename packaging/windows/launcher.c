/* dpdesk.exe: the double-click way into the desktop application of the Windows folder.
 *
 * Runs  <this folder>\python\pythonw.exe -m dpdesk gui [what was given]  with no console window
 * (a file dropped on dpdesk.exe, or "Open with", is passed on as the file to open). pythonw has
 * no console, so an error would vanish: its standard error goes to a log file, and when the
 * application ends with a failure the log's last lines are shown in a message box.
 *
 * Built with mingw-w64 by packaging/build-windows.sh (-mwindows: no console of its own).
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <wchar.h>

#define TAIL_BYTES 1500

static void show(const wchar_t *text) { MessageBoxW(NULL, text, L"dpdesk", MB_OK | MB_ICONERROR); }

/* the command line after the program's own name, as typed (quotes kept) */
static const wchar_t *arguments_after_program(const wchar_t *line) {
    if (*line == L'"') {
        line++;
        while (*line && *line != L'"') line++;
        if (*line) line++;
    } else {
        while (*line && *line != L' ' && *line != L'\t') line++;
    }
    while (*line == L' ' || *line == L'\t') line++;
    return line;
}

/* the last TAIL_BYTES of the log (UTF-8, as Python writes it) shown in a message box */
static void show_log_tail(const wchar_t *log, DWORD code) {
    static char bytes[TAIL_BYTES + 1];
    static wchar_t text[TAIL_BYTES + 512];
    DWORD got = 0;
    HANDLE file = CreateFileW(log, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0, NULL);
    if (file != INVALID_HANDLE_VALUE) {
        LARGE_INTEGER size;
        if (GetFileSizeEx(file, &size) && size.QuadPart > TAIL_BYTES) {
            LARGE_INTEGER at;
            at.QuadPart = size.QuadPart - TAIL_BYTES;
            SetFilePointerEx(file, at, NULL, FILE_BEGIN);
        }
        ReadFile(file, bytes, TAIL_BYTES, &got, NULL);
        CloseHandle(file);
    }
    bytes[got] = 0;
    int n = _snwprintf(text, TAIL_BYTES, L"dpdesk stopped (exit code %lu). Its last messages (all of them are in %ls):\n\n",
                       (unsigned long)code, log);
    if (n < 0) n = 0;
    MultiByteToWideChar(CP_UTF8, 0, bytes, -1, text + n, (int)(sizeof text / sizeof *text) - n - 1);
    show(text);
}

int WINAPI wWinMain(HINSTANCE instance, HINSTANCE previous, PWSTR unused, int show_mode) {
    (void)instance; (void)previous; (void)unused; (void)show_mode;
    static wchar_t folder[32768], python[32768], command[32768], log[32768];
    DWORD length = GetModuleFileNameW(NULL, folder, 32768);
    if (length == 0 || length >= 32768) { show(L"dpdesk cannot find its own folder."); return 1; }
    wchar_t *slash = wcsrchr(folder, L'\\');
    if (slash) *slash = 0;
    _snwprintf(python, 32768, L"%ls\\python\\pythonw.exe", folder);
    if (GetFileAttributesW(python) == INVALID_FILE_ATTRIBUTES) {
        wchar_t message[33000];
        _snwprintf(message, 33000, L"dpdesk cannot find %ls. Unpack the whole zip file and start dpdesk.exe from the "
                                   L"unpacked folder (not from inside the zip).", python);
        show(message);
        return 1;
    }
    _snwprintf(command, 32768, L"\"%ls\" -m dpdesk gui %ls", python, arguments_after_program(GetCommandLineW()));

    wchar_t temp[MAX_PATH + 1];
    DWORD temp_length = GetTempPathW(MAX_PATH + 1, temp);
    _snwprintf(log, 32768, L"%lsdpdesk-window.log", temp_length ? temp : L".\\");
    SECURITY_ATTRIBUTES inherit = {sizeof inherit, NULL, TRUE};
    HANDLE output = CreateFileW(log, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &inherit, CREATE_ALWAYS,
                                FILE_ATTRIBUTE_NORMAL, NULL);

    STARTUPINFOW startup = {0};
    startup.cb = sizeof startup;
    if (output != INVALID_HANDLE_VALUE) {
        startup.dwFlags = STARTF_USESTDHANDLES;
        startup.hStdInput = NULL;
        startup.hStdOutput = output;
        startup.hStdError = output;
    }
    PROCESS_INFORMATION process;
    if (!CreateProcessW(python, command, NULL, NULL, output != INVALID_HANDLE_VALUE, 0, NULL, NULL, &startup,
                        &process)) {
        wchar_t message[600];
        _snwprintf(message, 600, L"dpdesk could not start Python (Windows error %lu). An antivirus program may have "
                                 L"blocked or removed python\\pythonw.exe: unpack the zip again, or ask your IT "
                                 L"department to allow the folder.", (unsigned long)GetLastError());
        show(message);
        return 1;
    }
    WaitForSingleObject(process.hProcess, INFINITE);
    DWORD code = 1;
    GetExitCodeProcess(process.hProcess, &code);
    CloseHandle(process.hThread);
    CloseHandle(process.hProcess);
    if (output != INVALID_HANDLE_VALUE) CloseHandle(output);
    if (code != 0) show_log_tail(log, code);
    return (int)code;
}
