/* call-interpose-libc.c: libc's allocator, environment and thread
 * functions, counted (call-counter.h) and forwarded: the allocator to
 * glibc's __libc_* entry points (dlsym may itself allocate), the others
 * through dlsym (RTLD_NEXT). */
#include "call-interpose.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>

extern void *__libc_malloc (size_t size);
extern void *__libc_calloc (size_t n, size_t size);
extern void *__libc_realloc (void *ptr, size_t size);
extern void __libc_free (void *ptr);
extern void *__libc_memalign (size_t alignment, size_t size);
extern void *__libc_valloc (size_t size);

void *
malloc (size_t size)
{
  call_counter_count (CALL_SLOT_MALLOC, CALLER ());
  return __libc_malloc (size);
}

void *
calloc (size_t n, size_t size)
{
  call_counter_count (CALL_SLOT_CALLOC, CALLER ());
  return __libc_calloc (n, size);
}

void *
realloc (void *ptr, size_t size)
{
  call_counter_count (CALL_SLOT_REALLOC, CALLER ());
  return __libc_realloc (ptr, size);
}

void
free (void *ptr)
{
  call_counter_count (CALL_SLOT_FREE, CALLER ());
  __libc_free (ptr);
}

int
posix_memalign (void **out, size_t alignment, size_t size)
{
  call_counter_count (CALL_SLOT_POSIX_MEMALIGN, CALLER ());
  if (alignment % sizeof (void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0)
    return EINVAL;
  void *p = __libc_memalign (alignment, size);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

void *
aligned_alloc (size_t alignment, size_t size)
{
  call_counter_count (CALL_SLOT_ALIGNED_ALLOC, CALLER ());
  return __libc_memalign (alignment, size);
}

void *
memalign (size_t alignment, size_t size)
{
  call_counter_count (CALL_SLOT_MEMALIGN, CALLER ());
  return __libc_memalign (alignment, size);
}

void *
valloc (size_t size)
{
  call_counter_count (CALL_SLOT_VALLOC, CALLER ());
  return __libc_valloc (size);
}

char *
getenv (const char *name)
{
  call_counter_count (CALL_SLOT_GETENV, CALLER ());
  REAL (getenv);
  return real_ptr (name);
}

char *
secure_getenv (const char *name)
{
  call_counter_count (CALL_SLOT_SECURE_GETENV, CALLER ());
  REAL (secure_getenv);
  return real_ptr (name);
}

int
pthread_create (pthread_t *thread, const pthread_attr_t *attr, void *(*start) (void *), void *arg)
{
  call_counter_count (CALL_SLOT_PTHREAD_CREATE, CALLER ());
  REAL (pthread_create);
  return real_ptr (thread, attr, start, arg);
}

int
pthread_join (pthread_t thread, void **result)
{
  call_counter_count (CALL_SLOT_PTHREAD_JOIN, CALLER ());
  REAL (pthread_join);
  return real_ptr (thread, result);
}
