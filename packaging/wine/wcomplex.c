/* wcomplex.dll: test-only, for packaging/check-windows.sh under Wine. Never shipped.
 *
 * Wine 10's ucrtbase.dll leaves most C99 complex functions (crealf, csqrt, cpow, ...) as stubs
 * that abort the process when called, and numpy and scipy import them. These are the same
 * functions built from mingw-w64's C library; sitecustomize.py (beside this file) points each
 * stub at its w_ twin, under Wine only. The UCRT passes complex numbers as structs
 * (_Dcomplex {double[2]}, _Fcomplex {float[2]}, _Lcomplex {long double[2]} where long double is
 * double): the same structs here give the same calling convention by construction.
 */
#include <complex.h>
#include <math.h>

#ifndef CMPLX  /* older mingw-w64 headers */
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

typedef struct { double v[2]; } Dc;
typedef struct { float v[2]; } Fc;

static double complex D(Dc z) { return CMPLX(z.v[0], z.v[1]); }
static float complex F(Fc z) { return CMPLXF(z.v[0], z.v[1]); }
static Dc d(double complex z) { Dc r = {{creal(z), cimag(z)}}; return r; }
static Fc f(float complex z) { Fc r = {{crealf(z), cimagf(z)}}; return r; }
static double complex clog10_(double complex z) { return clog(z) / log(10.0); }
static float complex clog10f_(float complex z) { return clogf(z) / logf(10.0f); }

#define EXPORT __declspec(dllexport)
/* complex -> complex, for double (and long double, which is double in the UCRT) and float */
#define UNARY(name, dfun, ffun) \
    EXPORT Dc w_##name(Dc z) { return d(dfun(D(z))); } \
    EXPORT Dc w_##name##l(Dc z) { return d(dfun(D(z))); } \
    EXPORT Fc w_##name##f(Fc z) { return f(ffun(F(z))); }
/* complex -> real */
#define REAL(name, dfun, ffun) \
    EXPORT double w_##name(Dc z) { return dfun(D(z)); } \
    EXPORT double w_##name##l(Dc z) { return dfun(D(z)); } \
    EXPORT float w_##name##f(Fc z) { return ffun(F(z)); }

UNARY(cacos, cacos, cacosf) UNARY(cacosh, cacosh, cacoshf) UNARY(casin, casin, casinf)
UNARY(casinh, casinh, casinhf) UNARY(catan, catan, catanf) UNARY(catanh, catanh, catanhf)
UNARY(ccos, ccos, ccosf) UNARY(ccosh, ccosh, ccoshf) UNARY(cexp, cexp, cexpf) UNARY(clog, clog, clogf)
UNARY(clog10, clog10_, clog10f_) UNARY(conj, conj, conjf) UNARY(cproj, cproj, cprojf)
UNARY(csin, csin, csinf) UNARY(csinh, csinh, csinhf) UNARY(csqrt, csqrt, csqrtf)
UNARY(ctan, ctan, ctanf) UNARY(ctanh, ctanh, ctanhf)
static double normd(double complex z) { return creal(z) * creal(z) + cimag(z) * cimag(z); }
static float normf_(float complex z) { return crealf(z) * crealf(z) + cimagf(z) * cimagf(z); }
REAL(cabs, cabs, cabsf) REAL(carg, carg, cargf) REAL(cimag, cimag, cimagf) REAL(creal, creal, crealf)
REAL(norm, normd, normf_)

EXPORT Dc w_cpow(Dc x, Dc y) { return d(cpow(D(x), D(y))); }
EXPORT Dc w_cpowl(Dc x, Dc y) { return d(cpow(D(x), D(y))); }
EXPORT Fc w_cpowf(Fc x, Fc y) { return f(cpowf(F(x), F(y))); }
EXPORT Dc w__Cbuild(double re, double im) { Dc r = {{re, im}}; return r; }
EXPORT Dc w__LCbuild(double re, double im) { Dc r = {{re, im}}; return r; }
EXPORT Fc w__FCbuild(float re, float im) { Fc r = {{re, im}}; return r; }
EXPORT Dc w__Cmulcc(Dc x, Dc y) { return d(D(x) * D(y)); }
EXPORT Dc w__LCmulcc(Dc x, Dc y) { return d(D(x) * D(y)); }
EXPORT Fc w__FCmulcc(Fc x, Fc y) { return f(F(x) * F(y)); }
EXPORT Dc w__Cmulcr(Dc x, double y) { return d(D(x) * y); }
EXPORT Dc w__LCmulcr(Dc x, double y) { return d(D(x) * y); }
EXPORT Fc w__FCmulcr(Fc x, float y) { return f(F(x) * y); }
