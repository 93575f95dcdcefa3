package com.beust.jcommander;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** The one annotation of JCommander the peer's sources use; bench/peers.py
 * sets the peer's options directly, so nothing reads it. */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD})
public @interface Parameter {
  String[] names() default {};
  String description() default "";
  boolean required() default false;
  boolean help() default false;
}
