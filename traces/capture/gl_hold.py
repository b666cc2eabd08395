#!/usr/bin/env python3
"""Holds an OpenGL context on the X display and sleeps: the stand-in for a
desktop's compositor (GNOME Shell, KWin, Xfwm's GL back end), which draws
the screen with the GPU's driver and so keeps the driver's libraries
(libGL, the Mesa driver, LLVM) mapped and in the page cache. Xfce on Xvfb
composites without GL, so without this every application launch read the
graphics stack cold.

Usage (in the session, as its user): gl_hold.py  (DISPLAY from the
environment). Prints "gl_hold: RENDERER" once the context has drawn, then
sleeps until killed. Exits 1 with a message when there is no display or
no GLX visual.
"""
import ctypes
import ctypes.util
import signal
import sys

GLX_RGBA = 4
GL_COLOR_BUFFER_BIT = 0x4000
GL_RENDERER = 0x1F01


def load(name):
    path = ctypes.util.find_library(name)
    if not path:
        sys.exit(f"gl_hold: lib{name} not found")
    return ctypes.CDLL(path)


class XVisualInfo(ctypes.Structure):
    _fields_ = [
        ("visual", ctypes.c_void_p),
        ("visualid", ctypes.c_ulong),
        ("screen", ctypes.c_int),
        ("depth", ctypes.c_int),
        ("c_class", ctypes.c_int),
        ("red_mask", ctypes.c_ulong),
        ("green_mask", ctypes.c_ulong),
        ("blue_mask", ctypes.c_ulong),
        ("colormap_size", ctypes.c_int),
        ("bits_per_rgb", ctypes.c_int),
    ]


def main():
    x11 = load("X11")
    gl = load("GL")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XDefaultScreen.argtypes = [ctypes.c_void_p]
    x11.XRootWindow.restype = ctypes.c_ulong
    x11.XRootWindow.argtypes = [ctypes.c_void_p, ctypes.c_int]
    x11.XCreatePixmap.restype = ctypes.c_ulong
    x11.XCreatePixmap.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
    gl.glXChooseVisual.restype = ctypes.POINTER(XVisualInfo)
    gl.glXChooseVisual.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    gl.glXCreateContext.restype = ctypes.c_void_p
    gl.glXCreateContext.argtypes = [ctypes.c_void_p, ctypes.POINTER(XVisualInfo), ctypes.c_void_p, ctypes.c_int]
    gl.glXCreateGLXPixmap.restype = ctypes.c_ulong
    gl.glXCreateGLXPixmap.argtypes = [ctypes.c_void_p, ctypes.POINTER(XVisualInfo), ctypes.c_ulong]
    gl.glXMakeCurrent.restype = ctypes.c_int
    gl.glXMakeCurrent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]
    gl.glGetString.restype = ctypes.c_char_p
    gl.glGetString.argtypes = [ctypes.c_uint]

    dpy = x11.XOpenDisplay(None)
    if not dpy:
        sys.exit("gl_hold: cannot open the X display (DISPLAY unset or refused)")
    screen = x11.XDefaultScreen(dpy)
    attrs = (ctypes.c_int * 2)(GLX_RGBA, 0)
    vi = gl.glXChooseVisual(dpy, screen, attrs)
    if not vi:
        sys.exit("gl_hold: no GLX RGBA visual on the display")
    pixmap = x11.XCreatePixmap(dpy, x11.XRootWindow(dpy, screen), 64, 64, vi.contents.depth)
    drawable = gl.glXCreateGLXPixmap(dpy, vi, pixmap)
    ctx = gl.glXCreateContext(dpy, vi, None, 1)
    if not ctx or not gl.glXMakeCurrent(dpy, drawable, ctx):
        sys.exit("gl_hold: cannot make a GLX context current")
    # One frame drawn, so the driver and its code generator are loaded.
    gl.glClearColor(ctypes.c_float(0.2), ctypes.c_float(0.3), ctypes.c_float(0.4), ctypes.c_float(1.0))
    gl.glClear(GL_COLOR_BUFFER_BIT)
    gl.glFinish()
    renderer = gl.glGetString(GL_RENDERER) or b"?"
    print(f"gl_hold: {renderer.decode(errors='replace')}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
