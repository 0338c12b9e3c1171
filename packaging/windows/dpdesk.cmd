@echo off
rem dpdesk's command line: dpdesk.cmd release FILE --mechanism ... (dpdesk.cmd --help lists the commands).
rem Runs the Python in this folder's python\ folder, whatever else the machine has installed.
"%~dp0python\python.exe" -m dpdesk %*
exit /b %ERRORLEVEL%
