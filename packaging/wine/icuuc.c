/* icuuc.dll: test-only, for packaging/check-windows.sh under Wine. Never shipped.
 *
 * Qt6Core.dll links against Windows' own ICU (icuuc.dll, in System32 since Windows 10 1703)
 * for legacy text codecs; Wine has none, so Qt would not load. This stand-in has the functions
 * Qt imports and reports every codec unsupported (U_UNSUPPORTED_ERROR), as an ICU without
 * converters would: Qt then uses its built-in UTF-8/UTF-16/Latin-1 codecs, all dpdesk needs.
 */
#define EXPORT __declspec(dllexport)
#define U_UNSUPPORTED_ERROR 16
typedef int UErrorCode;

static void *unsupported(UErrorCode *error) {
    if (error && *error <= 0) *error = U_UNSUPPORTED_ERROR;
    return 0;
}

EXPORT void *ucnv_open(const char *name, UErrorCode *error) { (void)name; return unsupported(error); }
EXPORT const char *ucnv_getStandardName(const char *name, const char *standard, UErrorCode *error) {
    (void)name; (void)standard; return unsupported(error);
}
EXPORT int ucnv_countAvailable(void) { return 0; }
EXPORT const char *ucnv_getAvailableName(int n) { (void)n; return 0; }
/* the rest take a converter, and none is ever opened */
#define NONE(name) EXPORT void *name(void) { return 0; }
NONE(UCNV_TO_U_CALLBACK_SUBSTITUTE) NONE(UCNV_FROM_U_CALLBACK_SUBSTITUTE) NONE(ucnv_close) NONE(ucnv_reset)
NONE(ucnv_getMaxCharSize) NONE(ucnv_getName) NONE(ucnv_getToUCallBack) NONE(ucnv_getFromUCallBack)
NONE(ucnv_setToUCallBack) NONE(ucnv_setFromUCallBack) NONE(ucnv_fromUnicode) NONE(ucnv_toUnicode)
NONE(ucnv_cbToUWriteUChars) NONE(ucnv_cbFromUWriteUChars) NONE(ucnv_toUCountPending) NONE(ucnv_fromUCountPending)
