/* SPDX-License-Identifier: MIT */
/* config.c: configuration files in Mercurial's syntax (bgrun/config.h). */

#include "bgrun/config.h"
#include "common/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define INCLUDE_DEPTH 10

struct item {
	char *section, *name, *value;
	char *where; /* "PATH:LINE", or "" */
};

struct bgrun_config {
	struct item *v;
	size_t n, cap;
	char *err;
};

int bgrun_config_new(struct bgrun_config **ret_config)
{
	struct bgrun_config *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return -ENOMEM;
	*ret_config = c;
	return 0;
}

static void item_free(struct item *it)
{
	free(it->section);
	free(it->name);
	free(it->value);
	free(it->where);
}

void bgrun_config_free(struct bgrun_config *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n; i++)
		item_free(&c->v[i]);
	free(c->v);
	free(c->err);
	free(c);
}

const char *bgrun_config_errmsg(const struct bgrun_config *c)
{
	return c->err != NULL ? c->err : "";
}

BGRUN__PRINTF(3, 4)
static int fail(struct bgrun_config *c, int r, const char *fmt, ...)
{
	va_list ap;

	free(c->err);
	va_start(ap, fmt);
	if (vasprintf(&c->err, fmt, ap) < 0)
		c->err = NULL;
	va_end(ap);
	return r;
}

static struct item *find(const struct bgrun_config *c, const char *section,
			 const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i].section, section) == 0 &&
		    strcmp(c->v[i].name, name) == 0)
			return &c->v[i];
	return NULL;
}

static void unset(struct bgrun_config *c, const char *section, const char *name)
{
	struct item *it = find(c, section, name);
	size_t i;

	if (it == NULL)
		return;
	i = (size_t)(it - c->v);
	item_free(it);
	memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof(c->v[0]));
	c->n--;
}

static int set_where(struct bgrun_config *c, const char *section,
		     const char *name, const char *value, const char *where)
{
	struct item it = {
		.section = strdup(section), .name = strdup(name),
		.value = strdup(value), .where = strdup(where),
	};

	if (it.section == NULL || it.name == NULL || it.value == NULL ||
	    it.where == NULL)
		goto oom;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct item *v = realloc(c->v, cap * sizeof(*v));

		if (v == NULL)
			goto oom;
		c->v = v;
		c->cap = cap;
	}
	unset(c, section, name);
	c->v[c->n++] = it;
	return 0;
oom:
	item_free(&it);
	return -ENOMEM;
}

int bgrun_config_set(struct bgrun_config *c, const char *section,
		     const char *name, const char *value)
{
	return set_where(c, section, name, value, "");
}

const char *bgrun_config_get(const struct bgrun_config *c, const char *section,
			     const char *name, const char **ret_where)
{
	const struct item *it = find(c, section, name);

	if (it == NULL)
		return NULL;
	if (ret_where != NULL)
		*ret_where = it->where;
	return it->value;
}

int bgrun_config_get_bool(struct bgrun_config *c, const char *section,
			  const char *name, bool *ret_value)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	const char *where = "", *v = bgrun_config_get(c, section, name, &where);

	if (v == NULL)
		return -ENOENT;
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*ret_value = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*ret_value = false;
			return 0;
		}
	}
	return fail(c, -EINVAL, "%s%s[%s] %s: not a boolean (yes or no)", where,
		    where[0] != '\0' ? ": " : "", section, name);
}

bool bgrun_config_next(const struct bgrun_config *c, const char *section,
		       size_t *iter, const char **ret_name,
		       const char **ret_value)
{
	for (size_t i = *iter; i < c->n; i++) {
		if (strcmp(c->v[i].section, section) != 0)
			continue;
		*iter = i + 1;
		*ret_name = c->v[i].name;
		*ret_value = c->v[i].value;
		return true;
	}
	*iter = c->n;
	return false;
}

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t' || *s == '\v' || *s == '\f' || *s == '\r')
		s++;
	n = strlen(s);
	while (n > 0 && strchr(" \t\v\f\r\n", s[n - 1]) != NULL)
		s[--n] = '\0';
	return s;
}

static int read_file(struct bgrun_config *c, const char *path, int depth);

/* %include: relative to the including file, ~/ to $HOME; missing is fine. */
static int include(struct bgrun_config *c, const char *from, const char *arg,
		   int depth)
{
	const char *home = getenv("HOME"), *slash = strrchr(from, '/');
	char *path = NULL;
	int r;

	if (arg[0] == '~' && arg[1] == '/' && home != NULL)
		r = asprintf(&path, "%s%s", home, arg + 1);
	else if (arg[0] == '/' || slash == NULL)
		r = asprintf(&path, "%s", arg);
	else
		r = asprintf(&path, "%.*s/%s", (int)(slash - from), from, arg);
	if (r < 0)
		return fail(c, -ENOMEM, "%s: %s", from, strerror(ENOMEM));
	r = read_file(c, path, depth + 1);
	free(path);
	return r == -ENOENT ? 0 : r;
}

static int read_file(struct bgrun_config *c, const char *path, int depth)
{
	FILE *f;
	char *line = NULL, *item = NULL, *section = strdup(""), where[64];
	size_t cap = 0;
	unsigned int lineno = 0;
	bool cont = false;
	int r = 0, read_errno = 0;

	if (section == NULL)
		return fail(c, -ENOMEM, "%s: %s", path, strerror(ENOMEM));
	if (depth > INCLUDE_DEPTH) {
		free(section);
		return fail(c, -EINVAL, "%s: includes nested too deeply", path);
	}
	f = fopen(path, "re");
	if (f == NULL) {
		r = -errno;
		free(section);
		if (r == -ENOENT)
			return r;
		return fail(c, r, "%s: %s", path, strerror(-r));
	}
	for (;;) {
		char *l, *v, *eq;

		if (r != 0)
			break;
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			read_errno = errno; /* 0 at the end of the file */
			break;
		}
		l = line;

		if (++lineno == 1 && strncmp(l, "\xef\xbb\xbf", 3) == 0)
			l += 3;
		(void)snprintf(where, sizeof(where), ":%u", lineno);
		if (cont) {
			if (l[0] == ';' || l[0] == '#')
				continue;
			if ((l[0] == ' ' || l[0] == '\t') && *trim(l) != '\0') {
				struct item *it = find(c, section, item);
				char *joined;

				if (it != NULL) {
					if (asprintf(&joined, "%s\n%s", it->value,
						     trim(l)) < 0) {
						r = -ENOMEM;
						break;
					}
					free(it->value);
					it->value = joined;
				}
				continue;
			}
			cont = false;
		}
		if (strncmp(l, "%include", 8) == 0 && (l[8] == ' ' || l[8] == '\t')) {
			r = include(c, path, trim(l + 8), depth);
			if (r < 0)
				break;
			continue;
		}
		if (l[0] == ';' || l[0] == '#' || *trim(l) == '\0')
			continue;
		if (l[0] == '[' && (v = strchr(l + 1, ']')) != NULL &&
		    v > l + 1 && memchr(l + 1, '[', (size_t)(v - l - 1)) == NULL) {
			char *s = strndup(l + 1, (size_t)(v - l - 1));

			if (s == NULL) {
				r = -ENOMEM;
				break;
			}
			free(section);
			section = s;
			continue;
		}
		eq = strchr(l, '=');
		if (eq != NULL && eq > l && !strchr(" \t", l[0])) {
			char *w = NULL;

			*eq = '\0';
			free(item);
			item = strdup(trim(l));
			cont = true;
			if (item == NULL || asprintf(&w, "%s%s", path, where) < 0) {
				free(w);
				r = -ENOMEM;
				break;
			}
			r = set_where(c, section, item, trim(eq + 1), w);
			free(w);
			continue;
		}
		if (strncmp(l, "%unset", 6) == 0 && (l[6] == ' ' || l[6] == '\t')) {
			unset(c, section, trim(l + 6));
			continue;
		}
		/* The position only: the line may be someone's secret. */
		r = fail(c, -EINVAL, "%s:%u: parse error%s", path, lineno,
			 l[0] == ' ' || l[0] == '\t' ?
				 " (unexpected leading whitespace)" : "");
	}
	if (r == -ENOMEM)
		r = fail(c, -ENOMEM, "%s: %s", path, strerror(ENOMEM));
	else if (r == 0 && ferror(f))
		r = fail(c, read_errno > 0 ? -read_errno : -EIO, "%s: %s", path,
			 strerror(read_errno > 0 ? read_errno : EIO));
	(void)fclose(f);
	free(line);
	free(item);
	free(section);
	return r;
}

int bgrun_config_read(struct bgrun_config *c, const char *path)
{
	int r = read_file(c, path, 0);

	if (r == -ENOENT)
		(void)fail(c, r, "%s: %s", path, strerror(ENOENT));
	return r;
}

int bgrun_config_default_path(char **ret_path)
{
	const char *env = getenv("BGRUN_CONFIG");
	char *path;

	if (env == NULL)
		return bgrun__user_path("XDG_CONFIG_HOME", ".config",
					"bgrun/config", ret_path);
	if (env[0] == '\0')
		return -ENOENT;
	path = strdup(env);
	if (path == NULL)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

int bgrun_config_read_user(struct bgrun_config *c)
{
	static const struct {
		const char *section, *name, *env;
	} to_env[] = {
		{ "log", "db", "BGRUN_DB" },
		{ "log", "strict", "BGRUN_STRICT_LOG" },
		{ "sink", "mode", "BGRUN_SINK" },
		{ "sink", "socket", "BGRUN_SOCKET" },
		{ "output", "capture", "BGRUN_OUTPUT" },
		{ "output", "max-size", "BGRUN_MAX_OUTPUT" },
		{ "output", "dir", "BGRUN_OUTPUT_DIR" },
		{ "output", "keep-env", "BGRUN_KEEP_ENV" },
	};
	char *path = NULL;
	int r = bgrun_config_default_path(&path);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return fail(c, r, "the configuration file: %s", strerror(-r));
	r = read_file(c, path, 0);
	free(path);
	if (r < 0 && r != -ENOENT)
		return r;
	for (size_t i = 0; i < sizeof(to_env) / sizeof(to_env[0]); i++) {
		const char *v = bgrun_config_get(c, to_env[i].section,
						 to_env[i].name, NULL);
		const char *home = getenv("HOME");
		char *expanded = NULL;
		int e;

		if (v == NULL || getenv(to_env[i].env) != NULL)
			continue;
		/* Paths: a leading ~/ is $HOME, as Mercurial expands them. */
		if (strncmp(v, "~/", 2) == 0 && home != NULL && home[0] != '\0') {
			if (asprintf(&expanded, "%s%s", home, v + 1) < 0)
				return fail(c, -ENOMEM, "%s", strerror(ENOMEM));
			v = expanded;
		}
		e = setenv(to_env[i].env, v, 0) < 0 ? errno : 0;
		free(expanded);
		if (e != 0)
			return fail(c, -e, "%s: %s", to_env[i].env, strerror(e));
	}
	return 0;
}
