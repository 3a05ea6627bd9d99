"use client";

import Script from "next/script";
import { useEffect, useRef } from "react";

type ScalarApp = { destroy?: () => void; app?: { unmount?: () => void } };
declare global {
  interface Window {
    Scalar?: { createApiReference: (target: string | HTMLElement, configuration: object) => ScalarApp };
  }
}

/** Scalar's API reference, mounted once its bundle (served from our origin) has loaded. */
export function ApiReference({ nonce, configuration }: { nonce?: string; configuration: object }) {
  const target = useRef<HTMLDivElement>(null);
  const mounted = useRef<ScalarApp | null>(null);

  const mount = () => {
    if (!target.current || mounted.current || !window.Scalar) return;
    mounted.current = window.Scalar.createApiReference(target.current, configuration);
  };

  useEffect(
    () => () => {
      mounted.current?.destroy?.();
      mounted.current = null;
    },
    [],
  );

  return (
    <>
      <div ref={target} data-testid="api-reference" />
      <Script src="/docs/api/scalar.js" nonce={nonce} strategy="afterInteractive" onReady={mount} />
    </>
  );
}
