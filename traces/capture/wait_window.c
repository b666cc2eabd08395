/*
 * wait_window PATTERN [TIMEOUT_S]: returns as soon as a viewable window whose
 * name matches PATTERN (POSIX extended regex, case-insensitive, as xdotool's
 * --name) is on the X display; exit 0 then, 1 on timeout, 2 on bad usage.
 *
 * Why not `xdotool search --sync --onlyvisible`: it looks again only every
 * 500 ms, so a launch's "done" point (and the done mark of its trace) came
 * 0-500 ms late, a quantisation as large as a fast drive's whole launch.
 * This waits on the X server's events instead: every window's creation,
 * mapping, reparenting and name changes wake it, and it checks again at once
 * (plus a check every 200 ms, in case an event was missed); the time from a
 * window becoming viewable to this program's exit is a few milliseconds.
 *
 * Built by traces/capture/native.sh with gcc and libX11 (libx11-dev) on the
 * host, and run from a tmpfs in the chroot, so it reads nothing from the
 * traced disk but the libX11 the desktop already has mapped.
 */
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static regex_t pattern;
static Atom net_wm_name, utf8_string;

/* A window that vanished between two requests is no error of ours. */
static int ignore_errors(Display *d, XErrorEvent *e) {
    (void)d;
    (void)e;
    return 0;
}

static int name_matches(Display *d, Window w) {
    int found = 0;
    char *name = NULL;
    if (XFetchName(d, w, &name) && name) {
        found = regexec(&pattern, name, 0, NULL, 0) == 0;
        XFree(name);
    }
    if (found)
        return 1;
    Atom type;
    int format;
    unsigned long n, left;
    unsigned char *value = NULL;
    if (XGetWindowProperty(d, w, net_wm_name, 0, 1024, False, utf8_string, &type, &format, &n,
                           &left, &value) == Success &&
        value) {
        if (type == utf8_string && format == 8) {
            char *s = malloc(n + 1);
            if (s) {
                memcpy(s, value, n);
                s[n] = 0;
                found = regexec(&pattern, s, 0, NULL, 0) == 0;
                free(s);
            }
        }
        XFree(value);
    }
    return found;
}

/* Whether a viewable window under `w` matches; selects the events of every
 * window it passes, so later changes under it wake the wait. */
static int scan(Display *d, Window w, int depth) {
    XWindowAttributes a;
    if (!XGetWindowAttributes(d, w, &a))
        return 0;
    if (depth > 0 && a.map_state != IsViewable)
        return 0;
    XSelectInput(d, w, SubstructureNotifyMask | PropertyChangeMask);
    if (depth > 0 && name_matches(d, w))
        return 1;
    if (depth >= 4)
        return 0;
    Window root, parent, *children = NULL;
    unsigned int n = 0;
    int found = 0;
    if (XQueryTree(d, w, &root, &parent, &children, &n)) {
        for (unsigned int i = 0; i < n && !found; i++)
            found = scan(d, children[i], depth + 1);
        if (children)
            XFree(children);
    }
    return found;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: wait_window PATTERN [TIMEOUT_S]\n");
        return 2;
    }
    double timeout = argc == 3 ? atof(argv[2]) : 600;
    if (regcomp(&pattern, argv[1], REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0) {
        fprintf(stderr, "wait_window: bad pattern %s\n", argv[1]);
        return 2;
    }
    Display *d = XOpenDisplay(NULL);
    if (!d) {
        fprintf(stderr, "wait_window: cannot open display %s\n", getenv("DISPLAY") ? getenv("DISPLAY") : "");
        return 2;
    }
    XSetErrorHandler(ignore_errors);
    net_wm_name = XInternAtom(d, "_NET_WM_NAME", False);
    utf8_string = XInternAtom(d, "UTF8_STRING", False);
    Window root = DefaultRootWindow(d);
    double end = now_s() + timeout;
    for (;;) {
        int found = scan(d, root, 0);
        XFlush(d);
        if (found)
            return 0;
        double left = end - now_s();
        if (left <= 0) {
            fprintf(stderr, "wait_window: no viewable window named %s\n", argv[1]);
            return 1;
        }
        if (!XPending(d)) {
            struct pollfd p = {.fd = ConnectionNumber(d), .events = POLLIN};
            poll(&p, 1, left < 0.2 ? (int)(left * 1000) + 1 : 200);
        }
        while (XPending(d)) { /* everything that arrived: one scan for all */
            XEvent e;
            XNextEvent(d, &e);
        }
    }
}
